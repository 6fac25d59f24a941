// Search as you type: library.search (record:false) 150 ms after the last
// key; Enter, or tapping a result, records the search. Recent searches
// show while the field is empty. Results: artist and album hits found in
// the first page of tracks, then every track, a page at a time as the list
// scrolls (a long list keeps only the rows on screen: vlist.js). A pasted
// http(s) URL can be played as a stream, or saved for offline.

import { h, clear, toast, errText, emptyNote, icon, art } from './ui.js';
import { t, count } from './i18n.js';
import { call, act } from './rpc.js';
import { trackRow } from './tracks.js';
import { addToQueue, saveOffline } from './actions.js';
import { remember } from './store.js';
import { vlist } from './vlist.js';

const PAGE = 200; // library.search takes at most 500 a call

export function createSearch(go) {
  const input = h('input.field.search', { type: 'search', placeholder: t('search.placeholder'), 'aria-label': t('search.label'),
    'data-test': 'search-input', autocapitalize: 'off', spellcheck: 'false', enterkeyhint: 'search' });
  const out = h('div.results', { 'data-test': 'search-results' });
  const form = h('form.searchbar', { role: 'search', onsubmit: (e) => { e.preventDefault(); run(true); input.blur(); } }, icon('search'), input);
  const el = h('section.view', { id: 'view-search', 'aria-label': t('tab.search') }, h('h1.sr', { text: t('tab.search') }), form, out);

  let timer = 0, seq = 0, shownQuery = null;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => run(false), 150);
  });

  function run(record) {
    clearTimeout(timer);
    const q = input.value.trim();
    const mine = ++seq;
    if (!q) { shownQuery = null; recent(); return; }
    if (/^https?:\/\/\S+$/i.test(q)) { streamOffer(q); return; }
    call('library.search', { query: q, limit: PAGE, record: !!record }).then((r) => {
      if (mine !== seq) return; // an older answer, overtaken by newer typing
      shownQuery = q;
      show(q, r, mine);
    }, (e) => { if (mine === seq) toast(errText(e)); });
  }

  function recordPick() {
    if (shownQuery) call('searches.record', { query: shownQuery }).catch((e) => toast(errText(e)));
  }

  function show(q, r, mine) {
    clear(out);
    const tracks = (r.tracks || []).slice();
    remember(tracks);
    out.dataset.count = String(tracks.length);
    out.dataset.complete = String(!r.hasMore);
    if (!tracks.length) { out.dataset.query = q; out.appendChild(emptyNote(t('search.nothing', { query: q }))); return; }
    const artists = new Map(), albums = new Map();
    for (const tr of tracks) {
      const a = tr.albumArtist || tr.artist;
      if (tr.artist) artists.set(tr.artist, (artists.get(tr.artist) || 0) + 1);
      if (tr.album) {
        const k = (a || '') + '\u0000' + tr.album;
        if (!albums.has(k)) albums.set(k, { name: tr.album, artist: a || '', coverHash: tr.coverHash });
      }
    }
    const topArtists = Array.from(artists.keys()).slice(0, 4);
    const topAlbums = Array.from(albums.values()).slice(0, 6);
    if (topArtists.length) {
      out.appendChild(h('h2.sec', { text: t('search.artists') }));
      out.appendChild(h('div.chips', null, topArtists.map((a) => h('button.chip', { type: 'button', 'data-test': 'search-artist',
        onclick: () => { recordPick(); go('library/artist/' + encodeURIComponent(a)); } }, a))));
    }
    if (topAlbums.length) {
      out.appendChild(h('h2.sec', { text: t('search.albums') }));
      out.appendChild(h('div.hscroll', null, topAlbums.map((al) => h('button.tile', { type: 'button', 'data-test': 'search-album',
        onclick: () => { recordPick(); go('library/album/' + encodeURIComponent(al.artist) + '/' + encodeURIComponent(al.name)); } },
        art(al.coverHash, al.name), h('span.t', { text: al.name }), h('span.s', { text: al.artist })))));
    }
    const heading = h('h2.sec', { 'data-test': 'search-tracks-heading' });
    const said = () => { heading.textContent = r.hasMore ? t('search.tracksSoFar', { n: tracks.length }) : t('search.tracksAll', { n: tracks.length }); };
    said();
    out.appendChild(h('div.bar', null, heading, tracks.length > 1 ? h('button.btn', { type: 'button', 'data-test': 'search-add-all',
      onclick: () => { recordPick(); addToQueue({ search: q }, 'end', t('search.allResults')); } }, icon('plus'), t('search.addAllResults')) : null));
    // The rest a page at a time, as the list nears its end.
    const list = vlist({ test: 'search-list', label: t('search.tracks'), count: tracks.length, total: r.hasMore ? null : tracks.length,
      render: (i) => trackRow(tracks[i], { test: 'search-result', onPick: recordPick }),
      more: () => call('library.search', { query: q, limit: PAGE, offset: tracks.length }).then((next) => {
        if (mine !== seq) return;
        const got = next.tracks || [];
        remember(got);
        for (const tr of got) tracks.push(tr);
        r = next;
        const done = !next.hasMore || !got.length;
        out.dataset.count = String(tracks.length);
        out.dataset.complete = String(done);
        said();
        list.setCount(tracks.length, done ? tracks.length : null);
      }, (e) => { toast(errText(e)); list.setCount(tracks.length, tracks.length); }) });
    out.appendChild(list.el);
    list.draw();
    out.dataset.query = q;
  }

  function streamOffer(url) {
    clear(out);
    out.appendChild(h('h2.sec', { text: t('search.stream') }));
    out.appendChild(h('div.row.end', null,
      h('button.btn.primary', { type: 'button', onclick: () => addToQueue({ uris: [url] }, 'play') }, icon('play'), t('search.playStream')),
      h('button.btn', { type: 'button', onclick: () => addToQueue({ uris: [url] }, 'end', t('search.stream')) }, icon('plus'), t('ui.addToQueue')),
      h('button.btn', { type: 'button', 'data-test': 'search-offline', onclick: (e) => saveOffline(url, e.currentTarget) }, icon('offline'), t('offline.save'))));
  }

  function recent() {
    const mine = seq;
    call('searches.recent').then((r) => {
      if (mine !== seq) return;
      clear(out);
      delete out.dataset.query;
      const list = r.searches || [];
      if (!list.length) { out.appendChild(emptyNote(t('search.hint'))); return; }
      out.appendChild(h('div.bar', null, h('h2.sec', { text: t('search.recent') }),
        h('button.btn', { type: 'button', 'data-test': 'recent-clear', onclick: () => act('searches.clear').then((x) => { if (x) recent(); }) }, t('ui.clear'))));
      out.appendChild(h('div.chips', null, list.map((s) => h('button.chip', { type: 'button', 'data-test': 'recent-search',
        onclick: () => { input.value = s; run(true); } }, s))));
    }, (e) => { if (mine === seq) toast(errText(e)); });
  }

  el.refresh = () => { if (!input.value.trim()) recent(); else run(false); };
  el.shown = () => { if (!input.value) setTimeout(() => input.focus(), 50); };
  return el;
}
