// A list of library tracks with the three actions every list offers:
// play now (tap the row), play next, add to queue.

import { h, art, iconButton, fmtTime } from './ui.js';
import { addToQueue } from './actions.js';
import { remember } from './store.js';

// opts: test (data-test of a row, default "track-row"), onPick(track) called
// before an action (search records the query), extra(track) -> more buttons,
// sub(track) -> the second line.
export function trackList(tracks, opts) {
  opts = opts || {};
  remember(tracks);
  const test = opts.test || 'track-row';
  const pick = (t) => { if (opts.onPick) opts.onPick(t); };
  return h('ul.list', null, tracks.map((t) => {
    const sub = opts.sub ? opts.sub(t) : [t.artist, t.album].filter(Boolean).join(' · ');
    return h('li.row' + (opts.extra ? '.x3' : ''), { 'data-test': test, 'data-track-id': t.id, 'data-title': t.title },
      h('button.main', { type: 'button', 'data-test': test + '-play', 'aria-label': 'Play ' + t.title + ' now',
        onclick: () => { pick(t); addToQueue({ trackIds: [t.id] }, 'play'); } },
        art(t.coverHash, t.album || t.title, 'sm'),
        h('span.txt', null, h('span.t', { text: t.title }), h('span.s', { text: sub })),
        t.duration ? h('span.d', { text: fmtTime(t.duration) }) : null),
      iconButton('playnext', 'Play ' + t.title + ' next', test + '-next', () => { pick(t); addToQueue({ trackIds: [t.id] }, 'next', t.title); }),
      iconButton('plus', 'Add ' + t.title + ' to the queue', test + '-add', () => { pick(t); addToQueue({ trackIds: [t.id] }, 'end', t.title); }),
      opts.extra ? opts.extra(t) : null);
  }));
}
