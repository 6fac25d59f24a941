// Queue: the controlled group's queue in the user's order; play from an
// entry, move it up or down (or drag it by its handle), remove, clear,
// save the whole queue as a playlist, and save a network entry for offline.

import { h, iconButton, icon, art, clear, ask, confirmBox, toast, errText, emptyNote } from './ui.js';
import { S, on } from './store.js';
import { call } from './rpc.js';
import { player, saveOffline } from './actions.js';
import { t, count } from './i18n.js';

function describe(uri) {
  const tr = S.tracks.get(uri);
  if (tr) return { title: tr.title, sub: [tr.artist, tr.album].filter(Boolean).join(' · '), cover: tr.coverHash, name: tr.album || tr.title };
  if (/^https?:\/\//i.test(uri)) {
    let host = uri;
    try { host = new URL(uri).host; } catch (e) { /* keep the text */ }
    return { title: uri.split('/').pop() || host, sub: t('queue.stream', { host }), cover: null, name: host, radio: true };
  }
  return { title: uri.split('/').pop().replace(/\.[^.]+$/, ''), sub: uri, cover: null, name: uri };
}

export function createQueue() {
  const countEl = h('span.count', { 'data-test': 'queue-count' });
  const list = h('ul.list.queue', { 'data-test': 'queue-list' });
  // Says where a moved track went (focus stays on it; see render).
  const said = h('p.sr', { role: 'status', 'aria-live': 'polite', 'data-test': 'queue-said' });
  const el = h('section.view', { id: 'view-queue', 'aria-label': t('queue.title') },
    h('header.bar', null, h('h1', { text: t('queue.title') }), countEl,
      h('div.acts', null,
        h('button.btn', { type: 'button', 'data-test': 'queue-save', onclick: save }, icon('download'), t('ui.save')),
        h('button.btn', { type: 'button', 'data-test': 'queue-clear', onclick: clearQueue }, icon('trash'), t('ui.clear')))),
    list, said);

  // The list is drawn anew on each change: focus on a row's button stays on
  // the same entry's button (by id), wherever the entry moved to.
  function render() {
    const q = S.queue;
    const active = document.activeElement;
    const row = active && list.contains(active) && active.closest ? active.closest('li') : null;
    const keep = row && row.dataset.id ? { id: row.dataset.id, test: active.getAttribute('data-test') } : null;
    clear(list);
    const entries = (q && q.entries) || [];
    countEl.textContent = count('count.tracks', entries.length);
    if (!entries.length) {
      list.appendChild(h('li', null, emptyNote(t('queue.empty'))));
      if (keep) focusHeadingOf();
      return;
    }
    const last = entries.length - 1;
    shownCurrent = currentIndex();
    for (const e of entries) {
      const d = describe(e.uri);
      const cur = shownCurrent === e.index;
      list.appendChild(h('li.row' + (cur ? '.current' : ''), { 'data-test': 'queue-row', 'data-index': e.index, 'data-id': e.id, 'data-uri': e.uri, 'data-title': d.title, 'aria-current': cur ? 'true' : null },
        h('span.handle', { 'aria-hidden': 'true', 'data-index': e.index }, icon('drag')),
        h('button.main', { type: 'button', 'data-test': 'queue-play', onclick: () => player('queue.play', { index: e.index }),
          'aria-label': cur ? t('track.playingNow', { label: t('queue.playFrom', { title: d.title }) }) : t('queue.playFrom', { title: d.title }) },
          art(d.cover, d.name, 'sm'),
          h('span.txt', null, h('span.t', null, cur ? h('span.playing-mark', { 'data-test': 'playing-mark', 'aria-hidden': 'true' }, icon('vol')) : null, d.title),
            h('span.s', { text: d.sub }))),
        iconButton('up', t('queue.up', { title: d.title }), 'queue-up', () => move(e.index, e.index - 1), e.index === 0 ? 'dim' : null),
        iconButton('down', t('queue.down', { title: d.title }), 'queue-down', () => move(e.index, e.index + 1), e.index === last ? 'dim' : null),
        d.radio ? iconButton('offline', t('offline.saveName', { name: d.title }), 'queue-offline', (ev) => saveOffline(e.uri, ev.currentTarget)) : null,
        iconButton('x', t('queue.remove', { title: d.title }), 'queue-remove', () => player('queue.remove', { index: e.index }))));
    }
    if (keep) {
      const again = list.querySelector('li[data-id="' + keep.id + '"]');
      const target = again && (again.querySelector('[data-test="' + keep.test + '"]') || again.querySelector('button'));
      // The entry was removed: the row now in its place, else the heading.
      if (target) target.focus(); else focusHeadingOf();
    }
  }

  function focusHeadingOf() {
    const first = list.querySelector('li button');
    if (first) first.focus(); else { const hd = el.querySelector('h1'); hd.setAttribute('tabindex', '-1'); hd.focus(); }
  }

  function move(from, to) {
    const n = S.queue ? S.queue.entries.length : 0;
    if (to < 0 || to >= n) { toast(t(to < 0 ? 'queue.first' : 'queue.last'), 'info'); return; }
    const e = S.queue.entries[from];
    player('queue.move', { from, to }).then((r) => {
      if (r) said.textContent = t('queue.moved', { title: describe(e.uri).title, n: to + 1 });
    });
  }

  function clearQueue() {
    const n = S.queue ? S.queue.entries.length : 0;
    if (!n) { toast(t('queue.alreadyEmpty'), 'info'); return; }
    confirmBox(t('queue.clearAsk', { tracks: count('count.tracks', n) }), t('ui.clear')).then((yes) => { if (yes) player('queue.clear'); });
  }

  function save() {
    const entries = (S.queue && S.queue.entries) || [];
    if (!entries.length) { toast(t('queue.nothingToSave')); return; }
    ask(t('queue.saveAs'), '', t('ui.save')).then((name) => {
      if (!name) return;
      // playlists.saveQueue saves the main group's queue; another group's is saved track by track.
      const job = S.group === 'main' ? call('playlists.saveQueue', { name }) : saveOther(name, entries);
      job.then((r) => {
        const missing = (r.notInLibrary || []).length;
        toast(missing ? t('queue.savedMissing', { name: r.name, tracks: count('count.tracks', r.entries), missing })
          : t('queue.saved', { name: r.name, tracks: count('count.tracks', r.entries) }), 'info');
      }, (e) => toast(errText(e)));
    });
  }

  function saveOther(name, entries) {
    const ids = [], notInLibrary = [];
    for (const e of entries) { const tr = S.tracks.get(e.uri); if (tr) ids.push(tr.id); else notInLibrary.push(e.uri); }
    return call('playlists.create', { name }).then((p) => (ids.length ? call('playlists.add', { id: p.id, trackIds: ids }) : null)
      .then(() => ({ name: p.name, entries: ids.length, notInLibrary })));
  }

  // Drag by the handle: the row follows the finger; dropping moves it there.
  let drag = null;
  list.addEventListener('pointerdown', (ev) => {
    const hd = ev.target.closest && ev.target.closest('.handle');
    if (!hd) return;
    ev.preventDefault();
    const row = hd.parentNode;
    const rows = Array.prototype.slice.call(list.children);
    drag = { row, from: +hd.dataset.index, y0: ev.clientY, h: row.getBoundingClientRect().height, n: rows.length, to: +hd.dataset.index };
    row.classList.add('dragging');
    try { hd.setPointerCapture(ev.pointerId); } catch (e) { /* old browsers */ }
  });
  list.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    const dy = ev.clientY - drag.y0;
    drag.row.style.transform = 'translateY(' + dy + 'px)';
    drag.to = Math.max(0, Math.min(drag.n - 1, drag.from + Math.round(dy / drag.h)));
  });
  const end = () => {
    if (!drag) return;
    const d = drag;
    drag = null;
    d.row.classList.remove('dragging');
    d.row.style.transform = '';
    if (d.to !== d.from) player('queue.move', { from: d.from, to: d.to });
  };
  list.addEventListener('pointerup', end);
  list.addEventListener('pointercancel', end);

  // What plays is the player's track (queue.changed does not follow a jump to another entry).
  let shownCurrent = null;
  function currentIndex() {
    const st = S.status;
    if (st && typeof st.track === 'number') return st.track;
    return S.queue ? S.queue.current : -1;
  }
  on('status', () => { if (currentIndex() !== shownCurrent) render(); });
  on('queue', render);
  on('tracks', render);
  render();
  return el;
}
