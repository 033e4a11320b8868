// Two time-series charts (Chart.js): the leaf-layout mix (stacked areas) and the
// throughput of each workload. x = seconds of workload run time.
import {
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LogarithmicScale,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';
import { COLORS, LEAF_LAYOUTS, SHORT } from './layouts';

Chart.register(LineController, LineElement, PointElement, LinearScale, LogarithmicScale, CategoryScale, Filler, Legend, Tooltip);

export const WORKLOAD_COLORS: Record<string, string> = {
  load: '#94a3b8',
  insert: '#0ea5e9',
  'lookup-uniform': '#f97316',
  'lookup-zipf': '#ef4444',
  scan: '#2563eb',
  mix: '#16a34a',
};

export class Charts {
  readonly mix: Chart<'line', { x: number; y: number }[]>;
  readonly speed: Chart<'line', { x: number; y: number | null }[]>;
  private workloads: string[] = [];

  constructor(mixCanvas: HTMLCanvasElement, speedCanvas: HTMLCanvasElement, private labels: Record<string, string>) {
    const common = {
      animation: false as const,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'nearest' as const, axis: 'x' as const, intersect: false },
    };
    this.mix = new Chart(mixCanvas, {
      type: 'line',
      data: {
        datasets: LEAF_LAYOUTS.map((l) => ({
          label: `${SHORT[l]} leaves`,
          data: [] as { x: number; y: number }[],
          borderColor: COLORS[l],
          backgroundColor: COLORS[l],
          fill: true,
          pointRadius: 2,
          borderWidth: 1,
          stepped: false,
        })),
      },
      options: {
        ...common,
        scales: {
          x: { type: 'linear', title: { display: true, text: 'workload run time (s)' }, min: 0 },
          y: { stacked: true, beginAtZero: true, title: { display: true, text: 'leaves' } },
        },
        plugins: { legend: { position: 'bottom' }, title: { display: false } },
      },
    });
    this.speed = new Chart(speedCanvas, {
      type: 'line',
      data: { datasets: [] },
      options: {
        ...common,
        scales: {
          x: { type: 'linear', title: { display: true, text: 'workload run time (s)' }, min: 0 },
          // Log scale: a 100-record scan and a point lookup differ a hundredfold.
          y: { type: 'logarithmic', title: { display: true, text: 'operations / s (log scale)' } },
        },
        plugins: { legend: { position: 'bottom' } },
      },
    });
  }

  reset(): void {
    for (const d of this.mix.data.datasets) d.data = [];
    this.speed.data.datasets = [];
    this.workloads = [];
    this.mix.update();
    this.speed.update();
  }

  /** One sample: layout counts at time t (and throughput of `workload`, if given). */
  add(t: number, layouts: Record<string, number>, workload?: string, opsPerSec?: number): void {
    LEAF_LAYOUTS.forEach((l, i) => this.mix.data.datasets[i]!.data.push({ x: t, y: layouts[l] ?? 0 }));
    if (workload !== undefined && opsPerSec !== undefined) {
      let i = this.workloads.indexOf(workload);
      if (i < 0) {
        i = this.workloads.push(workload) - 1;
        this.speed.data.datasets.push({
          label: this.labels[workload] ?? workload,
          data: [],
          borderColor: WORKLOAD_COLORS[workload] ?? '#333',
          backgroundColor: WORKLOAD_COLORS[workload] ?? '#333',
          pointRadius: 1.5,
          borderWidth: 2,
          spanGaps: false,
        });
      }
      const ds = this.speed.data.datasets[i]!;
      // A gap where another workload ran in between.
      const last = ds.data[ds.data.length - 1];
      if (last && last.y !== null && t - last.x > 1.5) ds.data.push({ x: (t + last.x) / 2, y: null });
      ds.data.push({ x: t, y: Math.round(opsPerSec) });
    }
    this.mix.update('none');
    this.speed.update('none');
  }
}
