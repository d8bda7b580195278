/**
 * A ranking drawn as inline SVG in the day charts' style (chart.tsx): one horizontal bar per row, the
 * largest first, on an x-axis of round ticks in the figure's unit (format.ts axis), each bar labelled
 * with its row's name. Sized to its box in CSS pixels, so text keeps its size at 375 px. The picture is
 * a summary: the page's table beside it holds every number, and the SVG says so in its description.
 */
import { axis, count, money } from '../format.js';
import { useWidth } from './chart.js';

export interface Ranked {
  label: string;
  value: number;
}

const ROW_H = 26;
const TOP = 6;
const BOTTOM = 24;
const PAD_RIGHT = 12;
/** Names are cut to this many characters in the picture (the table shows them whole). */
const LABEL_CHARS = 22;
const CHAR_W = 7.2;

export function RankChart({ id, title, rows, unit }: { id: string; title: string; rows: Ranked[]; unit: 'usd' | 'count' }) {
  const [box, W] = useWidth();
  const ax = axis(Math.max(0, ...rows.map((r) => r.value)), unit);
  const short = (s: string) => (s.length > LABEL_CHARS ? `${s.slice(0, LABEL_CHARS - 1)}…` : s);
  // At phone width the labels sit above their bars; wider, in a column to their left.
  const stacked = W < 520;
  const left = stacked ? 8 : Math.ceil(Math.max(4, ...rows.map((r) => short(r.label).length)) * CHAR_W) + 12;
  const rowH = stacked ? ROW_H + 14 : ROW_H;
  const H = TOP + rows.length * rowH + BOTTOM;
  const plotW = W - left - PAD_RIGHT;
  const x = (v: number) => left + (v / ax.top) * plotW;
  const figure = (v: number) => (unit === 'usd' ? money(v) : count(v));
  const summary = `${title}: ${rows.length} ${rows.length === 1 ? 'row' : 'rows'}${rows[0] ? `, the largest ${rows[0].label} at ${figure(rows[0].value)}` : ''}. Every figure is in the table.`;
  return (
    <figure class="chart rank" data-chart={id}>
      <figcaption>{title}</figcaption>
      <div class="chart-box" ref={box}>
        <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-labelledby={`${id}-title ${id}-desc`} class="chart-svg">
          <title id={`${id}-title`}>{title}</title>
          <desc id={`${id}-desc`}>{summary}</desc>
          {ax.ticks.map((v, i) => (
            <g key={v} class="x-tick">
              <line class={v === 0 ? 'axis' : 'grid'} x1={x(v)} y1={TOP} x2={x(v)} y2={H - BOTTOM} />
              <text class="tick" x={x(v)} y={H - 6} text-anchor={i === 0 ? 'start' : i === ax.ticks.length - 1 ? 'end' : 'middle'}>{ax.label(v)}</text>
            </g>
          ))}
          {rows.map((r, i) => {
            const top = TOP + i * rowH + (stacked ? 14 : 0);
            return (
              <g key={`${i}-${r.label}`}>
                <text class="tick label" x={stacked ? left : left - 8} y={stacked ? top - 3 : top + ROW_H / 2 + 4} text-anchor={stacked ? 'start' : 'end'}>{short(r.label)}</text>
                {r.value > 0 ? <rect class="bar s3" x={left} y={top + 4} width={Math.max(1, x(r.value) - left)} height={ROW_H - 8}><title>{`${r.label}: ${figure(r.value)}`}</title></rect> : null}
              </g>
            );
          })}
        </svg>
      </div>
    </figure>
  );
}
