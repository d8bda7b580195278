/**
 * Every link in README.md, docs/ (every folder) and bench/results/HISTORY.md resolves: a relative link names a file
 * or folder that exists, and its #anchor (or a page's own #anchor) a heading of that page, as GitHub
 * makes heading anchors (lower case, punctuation dropped, spaces as hyphens, repeats numbered). External
 * links are only checked to be well-formed URLs (the tests have no internet). Links in code (fenced
 * blocks, inline code) are not links. The README stays within 400 lines.
 */
import test from 'ava';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/app.js';
import { docsPages } from '../support/doc-pages.js';

const PAGES = ['README.md', 'bench/results/HISTORY.md', ...docsPages()];

/** The page without fenced code blocks and inline code (their brackets are not links). */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, '');
}

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link: its text
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every heading's anchor of a page, repeats numbered as GitHub numbers them. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The targets of a page's inline links and images, `[text](target "title")`. */
function linksOf(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[(?:[^\]\n]|\][^(\n])*\]\(\s*<?((?:[^()\s>]|\([^()\s]*\))+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

test('unit: anchors as GitHub makes them', (t) => {
  t.is(slug('MCP clients and tool APIs'), 'mcp-clients-and-tool-apis');
  t.is(slug('Idempotency, audit, abuse controls'), 'idempotency-audit-abuse-controls');
  t.is(slug('The client address (`KEYWARD_TRUSTED_PROXIES`)'), 'the-client-address-keyward_trusted_proxies');
  t.is(slug('2. Firestore (native mode), its indexes and TTL'), '2-firestore-native-mode-its-indexes-and-ttl');
  t.deepEqual([...anchorsOf('# A\n## Usage\n```sh\n# not a heading\n```\n### Usage\n')], ['a', 'usage', 'usage-1']);
  t.deepEqual(linksOf('see [x](docs/a.md#b), `[no](c.md)`, ![pic](p.png "t") and [y](https://e.com/a_(b))'), ['docs/a.md#b', 'p.png', 'https://e.com/a_(b)']);
});

test('every relative link and #anchor in README.md, docs/ (every folder) and bench/results/HISTORY.md resolves; external links are well-formed', (t) => {
  const anchors = new Map<string, Set<string>>();
  const anchorsOfFile = (file: string) => {
    if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(path.join(ROOT, file), 'utf8')));
    return anchors.get(file)!;
  };
  const broken: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    const text = readFileSync(path.join(ROOT, page), 'utf8');
    for (const target of linksOf(text)) {
      checked++;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        if (/^https?:/i.test(target) && !URL.canParse(target)) broken.push(`${page}: ${target} is not a URL`);
        continue;
      }
      const [file, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURIComponent(file)));
      if (resolved.startsWith('..') || !existsSync(path.join(ROOT, resolved))) {
        broken.push(`${page}: ${target} (no such file ${resolved})`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (!resolved.endsWith('.md') || statSync(path.join(ROOT, resolved)).isDirectory()) {
        broken.push(`${page}: ${target} (an anchor into a file that has no headings)`);
      } else if (!anchorsOfFile(resolved).has(decodeURIComponent(anchor))) {
        broken.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
  }
  t.true(checked > 50, `only ${checked} links found: the link pattern is wrong`);
  t.deepEqual(broken, []);
});

test('the README is at most 400 lines and keeps the "MCP clients and tool APIs" heading', (t) => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  t.true(readme.split('\n').length <= 400, `README.md has ${readme.split('\n').length} lines`);
  t.regex(readme, /^#+ MCP clients and tool APIs$/m);
});
