/**
 * Charts drawn as inline SVG by hand (no chart library): bars per day, stacked when there are
 * several series, or a cumulative line; an optional limit drawn as a dashed line with its label,
 * the scale stretched to show it. Each chart carries a text title and summary for screen readers
 * and a table of its numbers behind a disclosure, so nothing is only in the picture.
 */

export interface Series {
  name: string;
  values: number[];
  /** A CSS class: the colour is the stylesheet's. */
  cls: string;
}

export interface ChartProps {
  id: string;
  title: string;
  labels: string[];
  series: Series[];
  kind?: 'bars' | 'line';
  limit?: { value: number; label: string } | undefined;
  format?: (n: number) => string;
}

const W = 600;
const H = 220;
const PAD = { left: 64, right: 12, top: 22, bottom: 30 };

/** A round number at or above `n`, so the axis reads well (1, 2, 5 × 10^k). */
export function niceCeiling(n: number): number {
  if (!(n > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

export function Chart({ id, title, labels, series, kind = 'bars', limit, format = String }: ChartProps) {
  const totals = labels.map((_, i) => (kind === 'bars' ? series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0) : Math.max(...series.map((s) => s.values[i] ?? 0))));
  const top = niceCeiling(Math.max(...totals, limit?.value ?? 0));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const step = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, step * 0.7);
  const x = (i: number) => PAD.left + i * step + (step - barW) / 2;
  const tickIdx = labels.length <= 1 ? [0] : [0, Math.floor((labels.length - 1) / 2), labels.length - 1];
  const last = totals[totals.length - 1] ?? 0;
  const summary = `${title}: ${labels.length} days${labels.length ? ` from ${labels[0]} to ${labels[labels.length - 1]}` : ''}; ` +
    `${kind === 'line' ? `total ${format(last)}` : `highest ${format(Math.max(0, ...totals))}`}${limit ? `; limit ${format(limit.value)}` : ''}.`;

  return (
    <figure class="chart" data-chart={id}>
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-title ${id}-desc`} class="chart-svg">
        <title id={`${id}-title`}>{title}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        <line class="axis" x1={PAD.left} y1={y(0)} x2={W - PAD.right} y2={y(0)} />
        <line class="grid" x1={PAD.left} y1={y(top)} x2={W - PAD.right} y2={y(top)} />
        <text class="tick" x={PAD.left - 6} y={y(top) + 4} text-anchor="end">{format(top)}</text>
        <text class="tick" x={PAD.left - 6} y={y(0) + 4} text-anchor="end">{format(0)}</text>
        {tickIdx.map((i) => labels[i] !== undefined ? (
          <text key={i} class="tick" x={x(i) + barW / 2} y={H - 6}
            text-anchor={labels.length > 1 && i === 0 ? 'start' : labels.length > 1 && i === labels.length - 1 ? 'end' : 'middle'}>{labels[i]!.slice(5)}</text>
        ) : null)}
        {kind === 'bars' ? labels.map((label, i) => {
          let base = 0;
          return (
            <g key={label}>
              {series.map((s) => {
                const v = s.values[i] ?? 0;
                const rect = v > 0 ? <rect class={`bar ${s.cls}`} x={x(i)} y={y(base + v)} width={barW} height={Math.max(0.5, y(base) - y(base + v))}><title>{`${label} ${s.name}: ${format(v)}`}</title></rect> : null;
                base += v;
                return rect;
              })}
            </g>
          );
        }) : series.map((s) => (
          <polyline key={s.name} class={`line ${s.cls}`} fill="none"
            points={s.values.map((v, i) => `${(x(i) + barW / 2).toFixed(1)},${y(v).toFixed(1)}`).join(' ')} />
        ))}
        {limit ? (
          <g class="limit">
            <line x1={PAD.left} y1={y(limit.value)} x2={W - PAD.right} y2={y(limit.value)} />
            <text x={W - PAD.right} y={y(limit.value) - 4} text-anchor="end">{`${limit.label}: ${format(limit.value)}`}</text>
          </g>
        ) : null}
      </svg>
      {series.length > 1 ? (
        <ul class="legend">{series.map((s) => <li key={s.name}><span class={`swatch ${s.cls}`} aria-hidden="true" />{s.name}</li>)}</ul>
      ) : null}
      <details>
        <summary>Numbers</summary>
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Day</th>{series.map((s) => <th scope="col" key={s.name}>{s.name}</th>)}</tr></thead>
            <tbody>
              {labels.map((label, i) => <tr key={label}><td>{label}</td>{series.map((s) => <td key={s.name}>{format(s.values[i] ?? 0)}</td>)}</tr>)}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
