// The one thing tape (through @ljharb/through and @ljharb/resumer) takes from Node's `stream`
// in a browser: the legacy `Stream` class, an EventEmitter with `pipe`.
import { EventEmitter } from 'events';

export class Stream extends EventEmitter {
  pipe(dest) {
    this.on('data', (chunk) => {
      if (dest.write(chunk) === false && typeof this.pause === 'function') this.pause();
    });
    if (typeof dest.on === 'function') dest.on('drain', () => typeof this.resume === 'function' && this.resume());
    this.on('end', () => dest.end?.());
    return dest;
  }
}
export default Stream;
