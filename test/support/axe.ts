/**
 * Test support: an accessibility pass with axe-core (the maintained checker) on the page as it is now.
 * axe's script is evaluated through the browser's debugging protocol (playwright's evaluate), which the
 * page's Content-Security-Policy does not govern, so the console's strict CSP stays on for the test.
 * Serious and critical violations fail; the others are reported in the test's log.
 */
import type { ExecutionContext } from 'ava';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** Runs axe (WCAG 2.1 A and AA rules and best practices) and asserts no serious or critical violation. */
export async function accessible(t: ExecutionContext, page: Page, where: string): Promise<void> {
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<Violation[]>(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] }).then((r) => r.violations)`,
  );
  const line = (v: Violation) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`;
  const minor = violations.filter((v) => v.impact !== 'serious' && v.impact !== 'critical');
  if (minor.length) t.log(`${where}: ${minor.map(line).join(' | ')}`);
  t.deepEqual(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map(line), [], `${where}: no serious or critical accessibility violation`);
}
