// A list of library tracks with the three actions every list offers:
// play now (tap the row), play next, add to queue.

import { h, art, iconButton, fmtTime } from './ui.js';
import { addToQueue } from './actions.js';
import { remember } from './store.js';
import { t } from './i18n.js';

// opts: test (data-test of a row, default "track-row"), onPick(track) called
// before an action (search records the query), extra(track) -> more buttons,
// sub(track) -> the second line.
export function trackList(tracks, opts) {
  opts = opts || {};
  remember(tracks);
  const test = opts.test || 'track-row';
  const pick = (tr) => { if (opts.onPick) opts.onPick(tr); };
  return h('ul.list', null, tracks.map((tr) => {
    const sub = opts.sub ? opts.sub(tr) : [tr.artist, tr.album].filter(Boolean).join(' · ');
    return h('li.row' + (opts.extra ? '.x3' : ''), { 'data-test': test, 'data-track-id': tr.id, 'data-title': tr.title },
      h('button.main', { type: 'button', 'data-test': test + '-play', 'aria-label': t('track.playNow', { title: tr.title }),
        onclick: () => { pick(tr); addToQueue({ trackIds: [tr.id] }, 'play'); } },
        art(tr.coverHash, tr.album || tr.title, 'sm'),
        h('span.txt', null, h('span.t', { text: tr.title }), h('span.s', { text: sub })),
        tr.duration ? h('span.d', { text: fmtTime(tr.duration) }) : null),
      iconButton('playnext', t('track.playNext', { title: tr.title }), test + '-next', () => { pick(tr); addToQueue({ trackIds: [tr.id] }, 'next', tr.title); }),
      iconButton('plus', t('track.add', { title: tr.title }), test + '-add', () => { pick(tr); addToQueue({ trackIds: [tr.id] }, 'end', tr.title); }),
      opts.extra ? opts.extra(tr) : null);
  }));
}
