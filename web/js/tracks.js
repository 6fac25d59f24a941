// A list of library tracks with the actions every list offers: play now
// (tap the row), a preview on this phone, play next, add to queue, add to a playlist. The track that
// plays now is marked in every list (aria-current and a speaker icon).

import { h, art, iconButton, icon, fmtTime, toast, errText, formBox } from './ui.js';
import { addToQueue } from './actions.js';
import { S, on, remember } from './store.js';
import { call } from './rpc.js';
import { t } from './i18n.js';
import { togglePreview, previewing } from './playhere.js';

// opts: test (data-test of a row, default "track-row"), onPick(track) called
// before an action (search records the query), extra(track) -> more buttons,
// sub(track) -> the second line, plain: no play-next/add/playlist buttons.
export function trackRow(tr, opts) {
  opts = opts || {};
  const test = opts.test || 'track-row';
  const pick = () => { if (opts.onPick) opts.onPick(tr); };
  const sub = opts.sub ? opts.sub(tr) : [tr.artist, tr.album].filter(Boolean).join(' · ');
  const li = h('li.row.x3', { 'data-test': test, 'data-track-id': tr.id, 'data-title': tr.title },
    h('button.main', { type: 'button', 'data-test': test + '-play', 'aria-label': t('track.playNow', { title: tr.title }),
      onclick: () => { pick(); addToQueue({ trackIds: [tr.id] }, 'play'); } },
      art(tr.coverHash, tr.album || tr.title, 'sm'),
      h('span.txt', null, h('span.t', { text: tr.title }), h('span.s', { text: sub })),
      tr.duration ? h('span.d', { text: fmtTime(tr.duration) }) : null),
    // A preview on this phone only (playhere.js); aria-pressed while it plays.
    tr.id !== undefined ? previewButton(tr, test) : null,
    opts.plain ? null : [
      iconButton('playnext', t('track.playNext', { title: tr.title }), test + '-next', () => { pick(); addToQueue({ trackIds: [tr.id] }, 'next', tr.title); }),
      iconButton('plus', t('track.add', { title: tr.title }), test + '-add', () => { pick(); addToQueue({ trackIds: [tr.id] }, 'end', tr.title); }),
      iconButton('listadd', t('track.toPlaylist', { title: tr.title }), test + '-playlist', () => { pick(); addToPlaylist([tr.id], tr.title); })],
    opts.extra ? opts.extra(tr) : null);
  mark(li, tr.id === playingId());
  return li;
}

function previewButton(tr, test) {
  const b = iconButton('preview', t('track.preview', { title: tr.title }), test + '-preview', () => togglePreview(tr.id), 'toggle');
  b.dataset.preview = String(tr.id);
  b.setAttribute('aria-pressed', String(previewing() === tr.id));
  return b;
}

export function trackList(tracks, opts) {
  remember(tracks);
  return h('ul.list', null, tracks.map((tr) => trackRow(tr, opts)));
}

// The now-playing mark: the library track the controlled group plays.
const playingId = () => (S.status && S.status.state !== 'idle' && S.status.trackId !== undefined ? S.status.trackId : null);

function mark(li, on) {
  const has = li.classList.contains('current');
  if (has === on) return;
  li.classList.toggle('current', on);
  if (on) li.setAttribute('aria-current', 'true'); else li.removeAttribute('aria-current');
  const main = li.querySelector('.main');
  const title = li.querySelector('.t');
  if (!main || !title) return;
  const label = t('track.playNow', { title: li.dataset.title });
  if (on) {
    title.insertBefore(h('span.playing-mark', { 'data-test': 'playing-mark', 'aria-hidden': 'true' }, icon('vol')), title.firstChild);
    main.setAttribute('aria-label', t('track.playingNow', { label }));
  } else {
    const m = title.querySelector('.playing-mark');
    if (m) m.remove();
    main.setAttribute('aria-label', label);
  }
}

let shownId = null;
on('status', () => {
  const id = playingId();
  if (id === shownId) return;
  shownId = id;
  for (const li of document.querySelectorAll('li[data-track-id]')) mark(li, id !== null && +li.dataset.trackId === id);
});

// Adds tracks to a playlist the person picks, or to a new one named here.
export function addToPlaylist(ids, label) {
  return call('playlists.list').then((r) => {
    const lists = r.playlists || [];
    const NEW = '';
    const pickList = h('select.picker', { 'data-test': 'playlist-pick' },
      lists.map((p) => h('option', { value: String(p.id), text: p.name })), h('option', { value: NEW, text: t('pl.newItem') }));
    const name = h('input.field', { type: 'text', 'data-test': 'playlist-new-name', autocomplete: 'off' });
    const nameField = [t('pl.newName'), name];
    const showName = () => { name.closest('label').hidden = pickList.value !== NEW; };
    pickList.addEventListener('change', showName);
    const asked = formBox(t('pl.addTitle', { title: label }), [[t('pl.playlist'), pickList], nameField], () => {
      if (pickList.value !== NEW) return { id: +pickList.value, name: pickList.selectedOptions[0].textContent };
      const n = name.value.trim();
      if (!n) { name.focus(); return null; }
      return { name: n };
    }, t('ui.add'));
    showName(); // the dialog is in the page: no name field unless "New playlist…" is picked
    return asked.then((to) => {
      if (!to) return null;
      const target = to.id !== undefined ? Promise.resolve(to) : call('playlists.create', { name: to.name });
      return target.then((p) => call('playlists.add', { id: p.id, trackIds: ids }).then(() => {
        toast(t('pl.added', { title: label, name: p.name || to.name }), 'info');
        return p;
      }));
    });
  }).catch((e) => { toast(errText(e)); return null; });
}
