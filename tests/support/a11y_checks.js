// Static accessibility checks run by tests/support/a11y.py in the page (arguments[0]: the
// minimum contrast ratio). Returns the problems found as sentences.
const problems = [];
const visible = el => el.getClientRects().length > 0 &&
  getComputedStyle(el).visibility !== 'hidden';
const name = el => (el.getAttribute('aria-label') || '').trim() ||
  (el.getAttribute('aria-labelledby') || '').split(/\s+/).map(
    id => (document.getElementById(id) || {}).textContent || '').join(' ').trim() ||
  [...(el.labels || [])].map(l => l.textContent).join(' ').trim() ||
  (el.getAttribute('title') || '').trim();
const describe = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
  (el.getAttribute('name') ? '[name=' + el.getAttribute('name') + ']' : '') +
  ' "' + (el.textContent || '').trim().slice(0, 40) + '"';

// labels
for (const el of document.querySelectorAll('input, select, textarea')) {
  if (['hidden', 'submit', 'button', 'reset'].includes(el.type)) continue;
  if (!name(el)) problems.push('label: no label for ' + describe(el));
}
for (const el of document.querySelectorAll('button, a[href], summary')) {
  if (!(el.textContent || '').trim() && !name(el)) problems.push('label: no text for ' + describe(el));
}

// contrast
const rgba = text => {
  const m = text.match(/rgba?\(([^)]+)\)/);
  if (!m) return null;
  const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
};
const over = (top, under) => {
  const a = top[3];
  return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
};
const background = el => {
  const layers = [];
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) layers.push(c);
    if (c && c[3] >= 1) break;
  }
  let colour = [255, 255, 255, 1];
  for (const c of layers.reverse()) colour = over(c, colour);
  return colour;
};
const luminance = c => {
  const ch = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
};
const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const svgFill = el => {
  const c = rgba(getComputedStyle(el).fill);
  return c;
};
let measured = 0;
for (const el of document.querySelectorAll('body *')) {
  if (['SCRIPT', 'STYLE', 'OPTION', 'TITLE'].includes(el.tagName)) continue;
  const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || !visible(el)) continue;
  let fg, bg;
  if (el instanceof SVGElement) {
    fg = svgFill(el);
    const rect = el.parentNode && el.parentNode.querySelector('rect');
    bg = rect ? svgFill(rect) : background(el.closest('svg').parentElement);
    if (bg && bg[3] < 1) bg = over(bg, background(el.closest('svg').parentElement));
  } else {
    bg = background(el);
    fg = rgba(getComputedStyle(el).color);
    if (fg && fg[3] < 1) fg = over(fg, bg);
  }
  if (!fg || !bg) continue;
  measured += 1;
  const r = ratio(fg, bg);
  if (r < arguments[0]) problems.push('contrast: ' + r.toFixed(2) + ':1 for ' + describe(el) +
    ' (' + fg.slice(0, 3) + ' on ' + bg.slice(0, 3) + ')');
}
if (!measured) problems.push('contrast: no text measured');

// landmarks and headings
const count = s => document.querySelectorAll(s).length;
if (count('main') !== 1) problems.push('landmarks: ' + count('main') + ' main elements');
if (count('body > header') !== 1) problems.push('landmarks: no banner (body > header)');
if (!count('nav')) problems.push('landmarks: no nav');
if (!document.documentElement.lang) problems.push('landmarks: html has no lang');
if (!(document.title || '').trim()) problems.push('headings: no title');
const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')];
if (headings.filter(h => h.tagName === 'H1').length !== 1) problems.push('headings: not exactly one h1');
let level = 0;
for (const h of headings) {
  const l = Number(h.tagName[1]);
  if (l > level + 1) problems.push('headings: ' + h.tagName + ' "' + h.textContent.trim().slice(0, 40) + '" skips a level');
  if (!h.textContent.trim()) problems.push('headings: empty ' + h.tagName);
  level = l;
}

// alternative text
for (const img of document.querySelectorAll('img')) {
  if (!img.hasAttribute('alt')) problems.push('alt: img without alt ' + img.src);
}
for (const svg of document.querySelectorAll('svg')) {
  if (svg.getAttribute('aria-hidden') === 'true') continue;
  if (svg.getAttribute('role') !== 'img' || !(svg.getAttribute('aria-label') || svg.querySelector('title')))
    problems.push('alt: svg without role=img and a label');
}
return problems;
