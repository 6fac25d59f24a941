// Library: artists → albums → tracks, an albums grid with covers, genres →
// albums, and the sections that share its sub-navigation: playlists,
// favourites, history, radio, podcasts. Routes: #/library/<section>[/…].
// The artists list and the albums grid keep only their visible rows in the
// page (vlist.js): a library of 100,000 tracks has thousands of each.

import { h, clear, art, toast, errText, emptyNote, icon, iconButton, fmtTime, focusHeading, hue } from './ui.js';
import { t, count, date, time } from './i18n.js';
import { call } from './rpc.js';
import { trackList } from './tracks.js';
import { vlist } from './vlist.js';
import { addToQueue } from './actions.js';
import { playlistsPage, playlistPage } from './playlists.js';
import { radioPage } from './radio.js';
import { podcastsPage, podcastPage } from './podcasts.js';

const SECTIONS = ['artists', 'albums', 'genres', 'playlists', 'favourites', 'history', 'radio', 'podcasts'];

export function createLibrary(go) {
  const chips = h('nav.chips.sub', { 'aria-label': t('lib.sections') }, SECTIONS.map((id) =>
    h('button.chip', { type: 'button', 'data-test': 'lib-' + id, 'data-sec': id, onclick: () => go('library/' + id) }, t('lib.' + id))));
  const body = h('div.libbody');
  const el = h('section.view', { id: 'view-library', 'aria-label': t('lib.title') }, chips, body);
  let route = ['artists'];
  let seq = 0;
  let focusWhenDrawn = false; // a route the person went to: its heading takes focus once drawn
  let focusNext = null; // what takes focus once the next draw is in (a moved playlist entry)

  function page(title, back, actions) {
    return h('header.bar', null,
      back ? iconButton('back', t('ui.back'), 'back', () => history.back()) : null,
      h('h1', { text: title }), actions ? h('div.acts', null, actions) : null);
  }

  // Draws one route; a route's loader returns a promise of the nodes.
  function render() {
    const mine = ++seq;
    const sec = route[0] || 'artists';
    for (const c of chips.children) c.setAttribute('aria-current', c.dataset.sec === sec || (sec === 'artist' && c.dataset.sec === 'artists') ||
      (sec === 'album' && c.dataset.sec === 'albums') || (sec === 'playlist' && c.dataset.sec === 'playlists') || (sec === 'genre' && c.dataset.sec === 'genres') ||
      (sec === 'podcast' && c.dataset.sec === 'podcasts') ? 'page' : 'false');
    const loader = LOADERS[sec] || LOADERS.artists;
    const ctx = { page, go, rerender: render, focusAfter: (fn) => { focusNext = fn; } };
    // A redraw of the same page (an edit, a notification) keeps focus on the same control of the same row.
    const active = document.activeElement;
    const row = active && body.contains(active) ? active.closest('[data-key]') : null;
    const keep = row ? { key: row.dataset.key, test: active.getAttribute('data-test') } : null;
    Promise.resolve(loader(route.slice(1).map(decodeURIComponent), ctx)).then((nodes) => {
      if (mine !== seq) return;
      clear(body).appendChild(h('div', null, nodes));
      const want = focusNext;
      focusNext = null;
      if (want) want(body);
      else if (keep) {
        const again = body.querySelector('[data-key="' + CSS.escape(keep.key) + '"]');
        const target = again && (again.querySelector('[data-test="' + keep.test + '"]') || again.querySelector('button'));
        if (target) target.focus(); else focusHeading(body);
      }
      if (focusWhenDrawn) { focusWhenDrawn = false; focusHeading(body); }
    }, (e) => {
      if (mine !== seq) return;
      toast(errText(e));
      clear(body).appendChild(h('div', null, page(t('lib.title')), emptyNote(errText(e))));
      if (focusWhenDrawn) { focusWhenDrawn = false; focusHeading(body); }
    });
  }

  el.route = (parts, moved) => { route = parts.length ? parts : ['artists']; if (moved) focusWhenDrawn = true; render(); };
  el.refresh = render;
  return el;
}

function artistsPage(_, ctx) {
  return call('library.artists').then((r) => {
    const list = r.artists || [];
    if (!list.length) return [ctx.page(t('lib.artists')), emptyNote(t('lib.noArtists'))];
    const rows = vlist({ test: 'artist-list', label: t('lib.artists'), count: list.length, total: list.length, render: (i) => {
      const a = list[i];
      return h('li.row', { 'data-test': 'artist-row' }, h('button.main', { type: 'button', onclick: () => ctx.go('library/artist/' + encodeURIComponent(a.name)) },
        h('span.txt', null, h('span.t', { text: a.name }), h('span.s', { text: count('count.albums', a.albums) + ' · ' + count('count.tracks', a.tracks) }))));
    } });
    return [ctx.page(t('lib.artists')), rows.el];
  });
}

function genresPage(_, ctx) {
  return call('library.genres').then((r) => {
    const list = r.genres || [];
    return [ctx.page(t('lib.genres')), list.length ? h('ul.list', { 'data-test': 'genre-list' }, list.map((g) =>
      h('li.row', { 'data-test': 'genre-row', 'data-genre': g.name }, h('button.main', { type: 'button', onclick: () => ctx.go('library/genre/' + encodeURIComponent(g.name)) },
        h('span.art.ph.sm', { 'aria-hidden': 'true', style: '--h:' + hue(g.name) }, icon('genre')),
        h('span.txt', null, h('span.t', { text: g.name }), h('span.s', { text: count('count.albums', g.albums) + ' · ' + count('count.tracks', g.tracks) })))))) :
      emptyNote(t('lib.noGenres'))];
  });
}

function genrePage(args, ctx) {
  const name = args[0] || '';
  return call('library.albums', { genre: name }).then((r) => {
    const list = r.albums || [];
    return [ctx.page(name, true), list.length ? albumGrid(list, ctx, true) : emptyNote(t('lib.noAlbumsIn', { name }))];
  });
}

function albumTile(al, ctx, showArtist) {
  return h('button.tile', { type: 'button', 'data-test': 'album-tile', 'data-album': al.name,
    onclick: () => ctx.go('library/album/' + encodeURIComponent(al.artist || '') + '/' + encodeURIComponent(al.name)) },
  art(al.coverHash, al.name), h('span.t', { text: al.name }),
  h('span.s', { text: [showArtist ? al.artist : null, al.year].filter(Boolean).join(' · ') || count('count.tracks', al.tracks) }));
}

// A few dozen albums are one grid; more are rows of tiles in a vlist (as
// many tiles a row as the screen's width takes, as the grid would).
function albumGrid(albums, ctx, showArtist) {
  if (albums.length <= 60) return h('div.grid', null, albums.map((al) => albumTile(al, ctx, showArtist)));
  const width = Math.min(document.getElementById('views').clientWidth - 24, 656);
  const cols = Math.max(1, Math.floor((width + 12) / (138 + 12)));
  const rows = Math.ceil(albums.length / cols);
  return vlist({ test: 'album-rows', label: t('lib.albums'), count: rows, total: rows, render: (r) =>
    h('li.gridrow', null, h('div.grid', { style: 'grid-template-columns:repeat(' + cols + ',1fr)' },
      albums.slice(r * cols, r * cols + cols).map((al) => albumTile(al, ctx, showArtist)))) }).el;
}

function albumsPage(_, ctx) {
  return call('library.albums').then((r) => {
    const list = r.albums || [];
    return [ctx.page(t('lib.albums')), list.length ? albumGrid(list, ctx, true) : emptyNote(t('lib.noAlbums'))];
  });
}

function artistPage(args, ctx) {
  const name = args[0] || '';
  return call('library.albums', { artist: name }).then((r) => {
    const list = r.albums || [];
    return [ctx.page(name, true), list.length ? albumGrid(list, ctx, false) : emptyNote(t('lib.noAlbumsBy', { name }))];
  });
}

function albumPage(args, ctx) {
  const artist = args[0] || '', album = args[1] || '';
  const params = { album };
  if (artist) params.artist = artist;
  return call('library.albumTracks', params).then((r) => {
    const tracks = r.tracks || [];
    const first = tracks[0] || {};
    const ids = tracks.map((tr) => tr.id);
    const total = tracks.reduce((s, t) => s + (t.duration || 0), 0);
    return [ctx.page(album, true),
      h('div.albumhead', null, art(first.coverHash, album, 'mid'),
        h('div', null,
          h('p.t', { text: album }),
          h('p.s', null, artist ? h('a', { href: '#/library/artist/' + encodeURIComponent(artist), text: artist }) : null),
          h('p.s', { text: [first.year, count('count.tracks', tracks.length), fmtTime(total)].filter(Boolean).join(' · ') }),
          h('div.row', null,
            h('button.btn.primary', { type: 'button', 'data-test': 'album-play', disabled: !ids.length, onclick: () => addToQueue({ trackIds: ids }, 'play') }, icon('play'), t('ui.play')),
            h('button.btn', { type: 'button', 'data-test': 'album-add', disabled: !ids.length, onclick: () => addToQueue({ trackIds: ids }, 'end', album) }, icon('plus'), t('ui.add'))))),
      trackList(tracks, { sub: (tr) => (tr.trackNumber ? tr.trackNumber + '. ' : '') + (tr.artist || '') })];
  });
}

function favouritesPage(_, ctx) {
  return call('favourites.list').then((r) => {
    const list = r.favourites || [];
    const ids = list.map((tr) => tr.id);
    return [ctx.page(t('lib.favourites'), false, list.length ? [h('button.btn', { type: 'button', onclick: () => addToQueue({ trackIds: ids }, 'end', t('lib.favourites')) }, icon('plus'), t('lib.addAll'))] : null),
      list.length ? trackList(list, { extra: (tr) => iconButton('heartF', t('lib.unlike', { title: tr.title }), 'unlike', () =>
        call('favourites.unlike', { id: tr.id }).then(() => ctx.rerender(), (e) => toast(errText(e))), 'liked') }) :
        emptyNote(t('lib.noFavourites'))];
  });
}

function historyPage(_, ctx) {
  return call('history.list', { limit: 100 }).then((r) => {
    const list = r.plays || [];
    return [ctx.page(t('lib.history')), list.length ? trackList(list, { sub: (tr) => [tr.artist, when(tr.startedAt)].filter(Boolean).join(' · ') }) :
      emptyNote(t('lib.nothingPlayed'))];
  });
}

function when(ms) {
  if (!ms) return '';
  const d = new Date(ms), now = new Date();
  const at = time(ms, { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === now.toDateString() ? at : date(ms, { day: 'numeric', month: 'short' }) + ' ' + at;
}

const LOADERS = {
  artists: artistsPage, artist: artistPage, albums: albumsPage, album: albumPage, genres: genresPage, genre: genrePage,
  playlists: playlistsPage, playlist: playlistPage, favourites: favouritesPage, history: historyPage, radio: radioPage,
  podcasts: podcastsPage, podcast: podcastPage,
};
