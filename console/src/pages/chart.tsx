/**
 * Charts drawn as inline SVG by hand (no chart library): bars per day, stacked when there are
 * several series, or a cumulative line; an optional limit drawn as a dashed line with its label,
 * the scale stretched to show it. The y-axis has round ticks in the figure's unit (format.ts axis).
 * The drawing is sized to its box in CSS pixels (measured, and again when the box changes), so axis
 * text is the stylesheet's size at any width, 375 px included, and fewer day labels are written
 * where fewer fit. Each chart carries a text title and summary for screen readers and a table of
 * its numbers behind a disclosure, so nothing is only in the picture.
 */
import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { axis, count, money } from '../format.js';

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
  unit: 'count' | 'usd';
}

const H = 200;
const PAD = { right: 10, top: 22, bottom: 26 };
/** Axis text is about this wide per character (12 px system font, digits). */
const CHAR_W = 7.2;

/** The chart's box width in CSS pixels, followed as it changes. */
export function useWidth(): [RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, Math.round(el.getBoundingClientRect().width)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

export function Chart({ id, title, labels, series, kind = 'bars', limit, unit }: ChartProps) {
  const [box, W] = useWidth();
  const totals = labels.map((_, i) => (kind === 'bars' ? series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0) : Math.max(...series.map((s) => s.values[i] ?? 0))));
  const ax = axis(Math.max(0, ...totals, limit?.value ?? 0), unit);
  const left = Math.ceil(Math.max(...ax.ticks.map((v) => ax.label(v).length)) * CHAR_W) + 10;
  const plotW = W - left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number) => PAD.top + plotH - (v / ax.top) * plotH;
  const step = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, step * 0.7);
  const x = (i: number) => left + i * step + (step - barW) / 2;
  // As many day labels as fit (each "MM-DD" about 40 px apart at least), first and last included.
  const fit = Math.max(2, Math.min(labels.length, Math.floor(plotW / 56)));
  const dayTicks = labels.length <= 1 ? [0] : [...new Set(Array.from({ length: fit }, (_, k) => Math.round((k * (labels.length - 1)) / (fit - 1))))];
  const last = totals[totals.length - 1] ?? 0;
  /** A figure (the limit, the summary) as the page writes figures, not as a tick. */
  const figure = (v: number) => (unit === 'usd' ? money(v) : count(v));
  const summary = `${title}: ${labels.length} days${labels.length ? ` from ${labels[0]} to ${labels[labels.length - 1]}` : ''}; ` +
    `${kind === 'line' ? `total ${figure(last)}` : `highest ${figure(Math.max(0, ...totals))}`}${limit ? `; limit ${figure(limit.value)}` : ''}.`;

  return (
    <figure class="chart" data-chart={id}>
      <figcaption>{title}</figcaption>
      <div class="chart-box" ref={box}>
        <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-labelledby={`${id}-title ${id}-desc`} class="chart-svg">
          <title id={`${id}-title`}>{title}</title>
          <desc id={`${id}-desc`}>{summary}</desc>
          {ax.ticks.map((v) => (
            <g key={v} class="y-tick">
              <line class={v === 0 ? 'axis' : 'grid'} x1={left} y1={y(v)} x2={W - PAD.right} y2={y(v)} />
              <text class="tick" x={left - 6} y={y(v) + 4} text-anchor="end">{ax.label(v)}</text>
            </g>
          ))}
          {dayTicks.map((i) => labels[i] !== undefined ? (
            <text key={i} class="tick day" x={x(i) + barW / 2} y={H - 6}
              text-anchor={labels.length > 1 && i === 0 ? 'start' : labels.length > 1 && i === labels.length - 1 ? 'end' : 'middle'}>{labels[i]!.slice(5)}</text>
          ) : null)}
          {kind === 'bars' ? labels.map((label, i) => {
            let base = 0;
            return (
              <g key={label}>
                {series.map((s) => {
                  const v = s.values[i] ?? 0;
                  const rect = v > 0 ? <rect class={`bar ${s.cls}`} x={x(i)} y={y(base + v)} width={barW} height={Math.max(0.5, y(base) - y(base + v))}><title>{`${label} ${s.name}: ${figure(v)}`}</title></rect> : null;
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
              <line x1={left} y1={y(limit.value)} x2={W - PAD.right} y2={y(limit.value)} />
              <text x={W - PAD.right} y={y(limit.value) - 5} text-anchor="end">{`${limit.label}: ${figure(limit.value)}`}</text>
            </g>
          ) : null}
        </svg>
      </div>
      {series.length > 1 ? (
        <ul class="legend">{series.map((s) => <li key={s.name}><span class={`swatch ${s.cls}`} aria-hidden="true" />{s.name}</li>)}</ul>
      ) : null}
      <details>
        <summary>Numbers</summary>
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Day</th>{series.map((s) => <th scope="col" key={s.name}>{s.name}</th>)}</tr></thead>
            <tbody>
              {labels.map((label, i) => <tr key={label}><td>{label}</td>{series.map((s) => <td key={s.name}>{unit === 'usd' ? `$${(s.values[i] ?? 0).toFixed(6)}` : (s.values[i] ?? 0).toLocaleString('en-US')}</td>)}</tr>)}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
