/**
 * The README and every docs page speak of the product in the present tense: none names an issue or pull request
 * ("issue 29", "issues 17 and 29", "#29", "issue #"), and none carries a run diary: a date in prose (a day
 * something was measured or checked), a dated results file, a commit a run was made at, or the words of a diary
 * ("that day", "the day before", "today", "the latest run", "a slow day", "a fresh clone"), or says what will
 * happen when something lands. Runs and their history live in bench/results/ (HISTORY.md and the files beside it),
 * which this test does not read.
 *
 * Dates that are data are allowed: inside fenced code blocks (a JSON example's `"from": "2026-11-01"`, a provider
 * file's `pricesAsOf`) and inside inline code, unless that code names a dated bench/results file.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/app.js';
import { docsPages } from '../support/doc-pages.js';

const PAGES = ['README.md', ...docsPages()];

interface Finding {
  line: number;
  text: string;
  rule: string;
}

/** Anywhere, code included: a reference to an issue or a pull request. */
const ISSUE_RULES: Array<[RegExp, string]> = [
  [/\bissues?\s+#?\d+(?:\s*(?:,|and|&)\s*#?\d+)*/gi, 'names an issue'],
  [/\bissue\s*#/gi, 'names an issue'],
  [/\b(?:PR|pull request)\s*#?\d+/gi, 'names a pull request'],
  // "#29" standing alone: not an anchor (`#9-verify`, `page.md#x`), a URL fragment, an HTML entity or a heading.
  [/(?<![\w#&/.:-])#\d+\b(?![-\w])/g, 'names an issue'],
];

/** In prose (code blocks and inline code removed): the marks of a run diary. */
const DIARY_RULES: Array<[RegExp, string]> = [
  [/\b\d{4}-\d{2}-\d{2}\b/g, 'a date in prose (a run or check diary; dates that are data go in code)'],
  [/\b(?:that day|the day before|the day's|the previous day|today'?s?|yesterday|a slow day|that morning|this morning)\b/gi, 'a diary word'],
  [/\b(?:latest|last|previous|earlier) (?:clean-clone )?(?:run|runs|pass)\b/gi, 'a diary word'],
  [/\b(?:fresh|clean) clone\b/gi, 'a diary word (how a run was made)'],
  [/\b(?:at|from|build|commit) (?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/g, 'a commit a run was made at'],
  [/\b(?:when|once|until|after)\b[^.\n]{0,60}\blands?\b/gi, 'future tense: what will hold when something lands'],
];

/** Anywhere outside fenced code, inline code included: a dated results file is a run's date. */
const RESULTS_FILE = /bench\/results\/[^\s)`'"]*\d{4}-\d{2}-\d{2}|\b[a-z0-9-]*\d{4}-\d{2}-\d{2}[a-z0-9-]*\.(?:json|md)\b/gi;

const FENCE = /^\s*(```|~~~)/;

/** What a page says that this test refuses, with its line. */
export function findDiary(markdown: string): Finding[] {
  const found: Finding[] = [];
  let inFence = false;
  markdown.split('\n').forEach((raw, i) => {
    const line = i + 1;
    for (const [rule, why] of ISSUE_RULES) for (const m of raw.matchAll(rule)) found.push({ line, text: m[0], rule: why });
    if (FENCE.test(raw)) {
      inFence = !inFence;
      return;
    }
    if (inFence) return;
    for (const m of raw.matchAll(RESULTS_FILE)) found.push({ line, text: m[0], rule: 'a dated results file (link bench/results/HISTORY.md instead)' });
    const prose = raw.replace(/`+[^`]*`+/g, ' ').replace(/\]\([^)]*\)/g, ']');
    for (const [rule, why] of DIARY_RULES) for (const m of prose.matchAll(rule)) found.push({ line, text: m[0], rule: why });
  });
  return found;
}

test('unit: what counts as an issue number or a run diary, and what does not', (t) => {
  const refused = [
    'Issue 29 measured 644 ms.',
    'The passes (issues 17 and 29) and what each measured.',
    'see the report of issue 23',
    'fixed in #29.',
    'as issue #12 said',
    'PR 40 added it',
    'Latest run, 2026-11-26, on a shared machine.',
    'The host was slower that day than the day before.',
    'Runs vary (1.04–1.10× over today\'s runs).',
    'in every run today',
    'from a clean clone at c59a7c4 on a shared 2-core machine',
    '| MCP clients | when the MCP providers land |',
    'Results: `bench/results/scale-2026-11-26.json`.',
    'See [the run](../bench/results/realtime-2026-11-25.json).',
  ];
  for (const text of refused) t.true(findDiary(text).length > 0, text);
  const allowed = [
    '[Verify](cloud-run.md#9-verify) and [the firestore step](#2-firestore-native-mode-its-indexes-and-ttl)',
    'A token minted with `"tools": ["get_issue", "list_*"]` may call `get_issue`.',
    'Its `as_of` is data: `"as_of": "2026-01-01"` in the provider\'s prices file.',
    '```json\n{"object": "list", "by": "token", "from": "2026-11-01", "to": "2026-11-26"}\n```',
    '```ts\n  pricesAsOf: \'2025-11-01\',\n```',
    '## 2. Firestore (native mode), its indexes and TTL',
    'Each run of `npm run bench` writes its results under bench/results/ and HISTORY.md lists them.',
    'The issuer lands the token at the audience.',
    '`?from=YYYY-MM-DD&to=YYYY-MM-DD`',
    'colour #fff and entity &#8212; stay',
  ];
  for (const text of allowed) t.deepEqual(findDiary(text), [], text);
});

test('the README and every docs page name no issue and carry no run diary', (t) => {
  const failures: string[] = [];
  for (const page of PAGES) {
    for (const f of findDiary(readFileSync(path.join(ROOT, page), 'utf8'))) failures.push(`${page}:${f.line}: "${f.text}": ${f.rule}`);
  }
  t.true(PAGES.length > 15, `only ${PAGES.length} pages found`);
  t.deepEqual(failures, []);
});
