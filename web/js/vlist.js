// A long list that keeps only the rows near the screen in the page: a
// search of 100,000 tracks or a library's thousands of artists scrolls as
// a list of 20 would. The page itself scrolls (not a box inside it), rows
// are absolutely placed at index × row height, and a row that has focus is
// kept while it is off screen, so Tab and a screen reader's reading stay
// on it. Rows say their place (aria-posinset/-setsize) since most are absent.
//
// vlist({ render(i) -> li, count, total?, more?() -> Promise, test, label })
//   .setCount(n, total?)  more rows were loaded (total: null while unknown)
//   .refresh()            draw the present rows again
//   .draw()               draw at once (once the list is in the page)
//   .el                   the <ul>

import { h } from './ui.js';

const OVERSCAN = 6; // rows drawn beyond each edge of the screen
const MORE_AHEAD = 100; // ask for the next page this many rows before the end

export function vlist(opts) {
  const el = h('ul.list.vlist', { 'data-test': opts.test || null, 'aria-label': opts.label || null });
  const rows = new Map(); // index -> li
  let size = 0, total = null, rowH = 0, frame = 0, loading = false;

  function place(li, i) {
    li.style.top = (i * rowH) + 'px';
    li.setAttribute('aria-posinset', String(i + 1));
    li.setAttribute('aria-setsize', String(total === null ? -1 : total));
    li.dataset.index = String(i);
  }

  function measure() {
    if (rowH || !size) return;
    // One row's height as the page styles it (text zoom included).
    const probe = opts.render(0);
    probe.style.visibility = 'hidden';
    el.appendChild(probe);
    rowH = probe.getBoundingClientRect().height || 61;
    probe.remove();
  }

  let shown = false;
  function draw() {
    frame = 0;
    if (!el.isConnected) { if (shown) api.close(); return; } // replaced by another list: gone for good
    shown = true;
    measure();
    el.style.height = (size * rowH) + 'px';
    const top = el.getBoundingClientRect().top; // the list's top relative to the screen
    const first = Math.max(0, Math.floor(-top / rowH) - OVERSCAN);
    const last = Math.min(size - 1, Math.ceil((window.innerHeight - top) / rowH) + OVERSCAN);
    const active = document.activeElement;
    for (const [i, li] of rows) {
      if ((i < first || i > last) && !li.contains(active)) { li.remove(); rows.delete(i); }
    }
    for (let i = first; i <= last; i++) {
      if (rows.has(i)) continue;
      const li = opts.render(i);
      place(li, i);
      rows.set(i, li);
      // In index order in the page too, so Tab moves down the list.
      let before = null, at = Infinity;
      for (const [j, other] of rows) if (j > i && j < at) { at = j; before = other; }
      el.insertBefore(li, before);
    }
    if (opts.more && !loading && total === null && last >= size - MORE_AHEAD) {
      loading = true;
      el.setAttribute('aria-busy', 'true');
      Promise.resolve(opts.more()).finally(() => { loading = false; el.removeAttribute('aria-busy'); schedule(); });
    }
  }

  function schedule() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  const onScroll = () => schedule();
  const onResize = () => { rowH = 0; api.refresh(); };
  window.addEventListener('scroll', onScroll, { passive: true });
  window.addEventListener('resize', onResize);
  // A row focused from the keyboard beyond the drawn ones brings its neighbours.
  el.addEventListener('focusin', schedule);

  const api = {
    el,
    setCount(n, all) {
      size = n;
      total = all === undefined ? null : all;
      for (const [i, li] of rows) place(li, i);
      schedule();
    },
    refresh() {
      for (const [, li] of rows) if (!li.contains(document.activeElement)) li.remove();
      for (const [i, li] of rows) if (!li.isConnected) rows.delete(i);
      schedule();
    },
    // Stops listening (the list left the page for good).
    close() { window.removeEventListener('scroll', onScroll); window.removeEventListener('resize', onResize); },
    // Draws now (the caller has just put the list in the page).
    draw() { cancelAnimationFrame(frame); draw(); },
    get drawn() { return rows.size; },
  };
  api.setCount(opts.count || 0, opts.total);
  // Drawn once the list is in the page (the caller appends it).
  setTimeout(schedule, 0);
  return api;
}
