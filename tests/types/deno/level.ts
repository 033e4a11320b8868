// adaptree/level, the package's second entry point, with its optional peer abstract-level.
import { AdaptreeLevel, MemoryStore } from 'adaptree/level';

const db = new AdaptreeLevel<string, { n: number }>({ valueEncoding: 'json', layout: 'adaptive' });
await db.put('a', { n: 1 });
await db.batch([{ type: 'del', key: 'a' }]);
for await (const [key, value] of db.iterator({ gte: 'a', limit: 10 })) console.log(key.length, value.n);
const snapshot = db.snapshot();
const got: { n: number } | undefined = await db.get('a', { snapshot });
await snapshot.close();
console.log(got, MemoryStore.name, db.openVersions);
await db.close();
