// Small DOM helpers shared by every screen: element builder, icons,
// artwork, time formatting, toasts and the modal prompt.

import { t } from './i18n.js';

// h('button.big', {data-test: 'x', onclick: f, 'aria-label': 'Play'}, child, ...)
// A tag may carry classes after dots. Attribute values false/null are left out;
// keys starting with "on" are event listeners; "text" sets textContent.
export function h(tag, attrs, ...children) {
  if (attrs && (attrs.nodeType || Array.isArray(attrs) || typeof attrs !== 'object')) { children.unshift(attrs); attrs = null; }
  const parts = tag.split('.');
  const el = parts[0] === 'svg' || parts[0] === 'path' ?
    document.createElementNS('http://www.w3.org/2000/svg', parts[0]) : document.createElement(parts[0] || 'div');
  if (parts.length > 1) el.setAttribute('class', parts.slice(1).join(' '));
  if (attrs) {
    for (const k in attrs) {
      const v = attrs[k];
      if (v === false || v === null || v === undefined) continue;
      if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else if (k === 'text') el.textContent = v;
      else if (k === 'class') el.setAttribute('class', (el.getAttribute('class') ? el.getAttribute('class') + ' ' : '') + v);
      else if (k === 'value' || k === 'checked' || k === 'disabled') el[k] = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
  }
  add(el, children);
  return el;
}

function add(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) add(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export const $ = (sel, root) => (root || document).querySelector(sel);

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Stroke icons on a 24×24 grid; a leading "F" means filled instead.
const ICONS = {
  play: 'FM8 5.5v13a1 1 0 0 0 1.5.9l10.2-6.5a1 1 0 0 0 0-1.8L9.5 4.6A1 1 0 0 0 8 5.5z',
  pause: 'FM6 5h4v14H6zM14 5h4v14h-4z',
  next: 'FM5 6.2v11.6a.8.8 0 0 0 1.2.7l8.6-5.8a.8.8 0 0 0 0-1.4L6.2 5.5A.8.8 0 0 0 5 6.2zM16.5 5h2.5v14h-2.5z',
  prev: 'FM19 6.2v11.6a.8.8 0 0 1-1.2.7l-8.6-5.8a.8.8 0 0 1 0-1.4l8.6-5.8a.8.8 0 0 1 1.2.7zM5 5h2.5v14H5z',
  shuffle: 'M16 3h5v5M4 20L21 3M21 16v5h-5M15 15l6 6M4 4l5 5',
  repeat: 'M17 1l4 4-4 4M3 11V9a4 4 0 0 1 4-4h14M7 23l-4-4 4-4M21 13v2a4 4 0 0 1-4 4H3',
  repeat1: 'M17 1l4 4-4 4M3 11V9a4 4 0 0 1 4-4h14M7 23l-4-4 4-4M21 13v2a4 4 0 0 1-4 4H3M11 10.5l1.5-1v5.5',
  heart: 'M20.8 4.6a5.5 5.5 0 0 0-7.8 0L12 5.7l-1-1.1a5.5 5.5 0 0 0-7.8 7.8l1 1.1L12 21.2l7.8-7.7 1-1.1a5.5 5.5 0 0 0 0-7.8z',
  heartF: 'FM20.8 4.6a5.5 5.5 0 0 0-7.8 0L12 5.7l-1-1.1a5.5 5.5 0 0 0-7.8 7.8l1 1.1L12 21.2l7.8-7.7 1-1.1a5.5 5.5 0 0 0 0-7.8z',
  now: 'M9 18V5l12-2v13M9 18a3 3 0 1 1-6 0 3 3 0 0 1 6 0zM21 16a3 3 0 1 1-6 0 3 3 0 0 1 6 0z',
  queue: 'M8 6h13M8 12h13M8 18h13M3.5 6h.01M3.5 12h.01M3.5 18h.01',
  search: 'M11 4a7 7 0 1 0 0 14 7 7 0 0 0 0-14zM21 21l-4.4-4.4',
  library: 'M4 4v16M9 4v16M13.5 4.5l5 15.2',
  rooms: 'M7 2h10a2 2 0 0 1 2 2v16a2 2 0 0 1-2 2H7a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2zM12 10a4 4 0 1 0 0 8 4 4 0 0 0 0-8zM12 6h.01',
  up: 'M18 15l-6-6-6 6',
  down: 'M6 9l6 6 6-6',
  x: 'M18 6L6 18M6 6l12 12',
  plus: 'M12 5v14M5 12h14',
  minus: 'M5 12h14',
  playnext: 'M3 6h12M3 12h8M3 18h8M15 12.5v8l6-4z',
  back: 'M15 18l-6-6 6-6',
  vol: 'M11 5L6 9H2v6h4l5 4zM15.5 8.5a5 5 0 0 1 0 7M19 5a10 10 0 0 1 0 14',
  announce: 'M3 10v4h3l8 5V5L6 10zM18 9l3-2M18 15l3 2M18.5 12H22',
  mute: 'M11 5L6 9H2v6h4l5 4zM22 9l-6 6M16 9l6 6',
  radio: 'M12 11a1 1 0 1 0 0 2 1 1 0 0 0 0-2zM16.2 7.8a6 6 0 0 1 0 8.4M7.8 16.2a6 6 0 0 1 0-8.4M19.1 4.9a10 10 0 0 1 0 14.2M4.9 19.1a10 10 0 0 1 0-14.2',
  party: 'M12 2l2.6 6.6L21.5 9l-5.3 4.5L18 20.5 12 16.7l-6 3.8 1.8-7L2.5 9l6.9-.4z',
  download: 'M12 3v12M7 10l5 5 5-5M5 21h14',
  upload: 'M12 16V4M7 9l5-5 5 5M5 21h14',
  edit: 'M12 20h9M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z',
  trash: 'M3 6h18M8 6V4h8v2M19 6l-1 14H6L5 6',
  check: 'M4 12.5l5 5L20 6.5',
  undo: 'M9 14L4 9l5-5M4 9h10a6 6 0 0 1 0 12h-3',
  refresh: 'M21 12a9 9 0 1 1-2.6-6.4L21 8M21 3v5h-5',
  note: 'M9 18V5l12-2v13M9 18a3 3 0 1 1-6 0 3 3 0 0 1 6 0zM21 16a3 3 0 1 1-6 0 3 3 0 0 1 6 0z',
  drag: 'M5 9h14M5 15h14',
  listadd: 'M3 6h12M3 12h12M3 18h7M17 14v8M13 18h8',
  preview: 'M3 18v-6a9 9 0 0 1 18 0v6M21 19a2 2 0 0 1-2 2h-1v-6h3zM3 19a2 2 0 0 0 2 2h1v-6H3z',
  back15: 'M4 4v5h5M4.6 9A8 8 0 1 1 4 13',
  fwd15: 'M20 4v5h-5M19.4 9A8 8 0 1 0 20 13',
  offline: 'M12 3v10M8 9l4 4 4-4M4 15v4a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-4',
  genre: 'M4 4h7v7H4zM13 4h7v7h-7zM4 13h7v7H4zM13 13h7v7h-7z',
  sound: 'M4 21v-7M4 10V3M12 21v-9M12 8V3M20 21v-5M20 12V3M1 14h6M9 8h6M17 16h6',
};

export function icon(name) {
  let d = ICONS[name] || ICONS.note;
  const filled = d[0] === 'F';
  if (filled) d = d.slice(1);
  const svg = h('svg', { viewBox: '0 0 24 24', 'aria-hidden': 'true', focusable: 'false', class: 'ic' });
  svg.appendChild(h('path', filled ? { d, fill: 'currentColor' } :
    { d, fill: 'none', stroke: 'currentColor', 'stroke-width': '2', 'stroke-linecap': 'round', 'stroke-linejoin': 'round' }));
  return svg;
}

// An icon button: label is its accessible name (and tooltip).
export function iconButton(name, label, test, onclick, cls) {
  return h('button.ib' + (cls ? '.' + cls : ''), { type: 'button', 'aria-label': label, title: label, 'data-test': test, onclick }, icon(name));
}

export function hue(s) {
  let x = 0;
  for (let i = 0; i < s.length; i++) x = (x * 31 + s.charCodeAt(i)) % 360;
  return x;
}

// Album art, or a neutral placeholder coloured from the name (no request).
export function art(coverHash, name, cls) {
  const ph = () => {
    const d = h('div.art.ph' + (cls ? '.' + cls : ''), { 'aria-hidden': 'true', style: '--h:' + hue(name || '') });
    d.appendChild(icon('note'));
    return d;
  };
  if (!coverHash) return ph();
  const img = h('img.art' + (cls ? '.' + cls : ''), { src: 'art/' + encodeURIComponent(coverHash), alt: '', loading: 'lazy', decoding: 'async' });
  img.addEventListener('error', () => { if (img.parentNode) img.parentNode.replaceChild(ph(), img); });
  return img;
}

export function fmtTime(s) {
  if (!(s >= 0) || !isFinite(s)) return '–:––';
  s = Math.floor(s);
  const m = Math.floor(s / 60), sec = s % 60;
  if (m >= 60) return Math.floor(m / 60) + ':' + pad(m % 60) + ':' + pad(sec);
  return m + ':' + pad(sec);
}
const pad = (n) => (n < 10 ? '0' : '') + n;

// The words for an error: a JSON-RPC error's message, or what went wrong.
export function errText(e) {
  if (!e) return t('ui.error');
  if (typeof e === 'string') return e;
  return e.message || String(e);
}

// Toasts: every error is shown in words; info toasts confirm an action.
let toastBox = null;
export function toast(msg, kind) {
  if (!toastBox) toastBox = $('#toasts');
  msg = String(msg);
  if (!/^[a-z]+:\/\//.test(msg)) msg = msg.charAt(0).toUpperCase() + msg.slice(1);
  for (const old of toastBox.children) if (old.firstChild.textContent === msg) old.remove(); // one of each at a time
  const box = h('div.toast' + (kind === 'info' ? '.info' : ''), { 'data-test': 'toast', 'data-kind': kind || 'error', role: kind === 'info' ? 'status' : 'alert', onclick: () => box.remove() },
    h('span', { text: msg }),
    h('button.tx', { type: 'button', 'aria-label': t('ui.dismiss'), onclick: () => box.remove() }, icon('x')));
  toastBox.appendChild(box);
  while (toastBox.children.length > 3) toastBox.removeChild(toastBox.firstChild);
  setTimeout(() => box.remove(), kind === 'info' ? 2500 : 6000);
}

// A modal asking for text (name of a playlist, group, …). Resolves to the
// trimmed text, or null when cancelled.
export function ask(title, value, okLabel) {
  return modal(title, true, value, okLabel);
}

// A password: typed hidden, never remembered by the field.
export function askSecret(title, okLabel) {
  return modal(title, true, '', okLabel, 'password');
}

export function confirmBox(title, okLabel) {
  return modal(title, false, '', okLabel).then((v) => v !== null);
}

// Focus goes into the dialog, and back to the control that opened it when
// it closes (or, if that control was redrawn meanwhile, to its successor
// with the same data-test in the same screen, else the screen's heading).
function modal(title, withInput, value, okLabel, type) {
  const opener = document.activeElement;
  const openerTest = opener && opener.getAttribute ? opener.getAttribute('data-test') : null;
  const openerView = opener && opener.closest ? opener.closest('.view') : null;
  return new Promise((resolve) => {
    const root = $('#modal');
    const input = withInput ? h('input.field', { type: type || 'text', value: value || '', 'aria-label': title, 'data-test': 'modal-input', autocomplete: 'off' }) : null;
    const done = (v) => {
      clear(root); root.hidden = true; document.removeEventListener('keydown', key);
      restoreFocus(opener, openerTest, openerView);
      resolve(v);
    };
    const ok = () => {
      if (!input) return done('');
      const v = input.value.trim();
      if (v) done(v); else input.focus();
    };
    const key = (e) => { if (e.key === 'Escape') done(null); };
    clear(root).appendChild(h('div.dialog', { role: 'dialog', 'aria-modal': 'true', 'aria-label': title },
      h('form', { onsubmit: (e) => { e.preventDefault(); ok(); } },
        h('h2', { text: title }), input,
        h('div.row.end',
          h('button.btn', { type: 'button', 'data-test': 'modal-cancel', onclick: () => done(null) }, t('ui.cancel')),
          h('button.btn.primary', { type: 'submit', 'data-test': 'modal-ok' }, okLabel || t('ui.ok'))))));
    root.hidden = false;
    root.onclick = (e) => { if (e.target === root) done(null); };
    document.addEventListener('keydown', key);
    setTimeout(() => (input || root.querySelector('.primary')).focus(), 30);
  });
}

function restoreFocus(opener, test, view) {
  if (opener && opener.isConnected && !opener.disabled && opener.offsetParent !== null) { opener.focus(); return; }
  const again = test && view && view.isConnected ? view.querySelector('[data-test="' + test + '"]') : null;
  if (again) again.focus();
  else if (view) focusHeading(view);
}

// Moves focus to a screen's heading (made focusable by script only), so a
// screen reader says where the person is now.
export function focusHeading(root) {
  const head = root && root.querySelector('h1, h2');
  if (!head) return;
  if (!head.hasAttribute('tabindex')) head.setAttribute('tabindex', '-1');
  head.focus({ preventScroll: true });
}

// A small form in the modal: `fields` are [label, element] pairs; `read()` gives the
// value to resolve with, or null to stay open (it says why itself). Cancel: null.
export function formBox(title, fields, read, okLabel) {
  const opener = document.activeElement;
  const openerTest = opener && opener.getAttribute ? opener.getAttribute('data-test') : null;
  const openerView = opener && opener.closest ? opener.closest('.view') : null;
  return new Promise((resolve) => {
    const root = $('#modal');
    const done = (v) => {
      clear(root); root.hidden = true; document.removeEventListener('keydown', key);
      restoreFocus(opener, openerTest, openerView);
      resolve(v);
    };
    const key = (e) => { if (e.key === 'Escape') done(null); };
    const ok = () => { const v = read(); if (v) done(v); };
    clear(root).appendChild(h('div.dialog', { role: 'dialog', 'aria-modal': 'true', 'aria-label': title },
      h('form', { onsubmit: (e) => { e.preventDefault(); ok(); } },
        h('h2', { text: title }),
        ...fields.map((f) => h('label.fld', null, h('span', { text: f[0] }), f[1])),
        h('div.row.end',
          h('button.btn', { type: 'button', 'data-test': 'modal-cancel', onclick: () => done(null) }, t('ui.cancel')),
          h('button.btn.primary', { type: 'submit', 'data-test': 'modal-ok' }, okLabel || t('ui.ok'))))));
    root.hidden = false;
    root.onclick = (e) => { if (e.target === root) done(null); };
    document.addEventListener('keydown', key);
    setTimeout(() => { if (fields.length) fields[0][1].focus(); }, 30);
  });
}

// Calls fn at most every `ms` while events keep coming, and once after the last.
export function throttle(fn, ms) {
  let last = 0, timer = 0, args = null;
  return function () {
    args = arguments;
    const wait = last + ms - Date.now();
    clearTimeout(timer);
    if (wait <= 0) { last = Date.now(); fn.apply(null, args); } else timer = setTimeout(() => { last = Date.now(); fn.apply(null, args); }, wait);
  };
}

export function emptyNote(text) {
  return h('p.empty', { text });
}
