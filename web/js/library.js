// Library: artists → albums → tracks, an albums grid with covers, and the
// sections that share its sub-navigation: playlists, favourites, history,
// radio, podcasts. Routes: #/library/<section>[/…].

import { h, clear, art, toast, errText, emptyNote, icon, iconButton, plural, fmtTime } from './ui.js';
import { call } from './rpc.js';
import { trackList } from './tracks.js';
import { addToQueue } from './actions.js';
import { playlistsPage, playlistPage } from './playlists.js';
import { radioPage } from './radio.js';
import { podcastsPage, podcastPage } from './podcasts.js';

const SECTIONS = [
  ['artists', 'Artists'], ['albums', 'Albums'], ['playlists', 'Playlists'],
  ['favourites', 'Favourites'], ['history', 'History'], ['radio', 'Radio'], ['podcasts', 'Podcasts'],
];

export function createLibrary(go) {
  const chips = h('nav.chips.sub', { 'aria-label': 'Library sections' }, SECTIONS.map(([id, label]) =>
    h('button.chip', { type: 'button', 'data-test': 'lib-' + id, 'data-sec': id, onclick: () => go('library/' + id) }, label)));
  const body = h('div.libbody');
  const el = h('section.view', { id: 'view-library', 'aria-label': 'Library' }, chips, body);
  let route = ['artists'];
  let seq = 0;

  function page(title, back, actions) {
    return h('header.bar', null,
      back ? iconButton('back', 'Back', 'back', () => history.back()) : null,
      h('h1', { text: title }), actions ? h('div.acts', null, actions) : null);
  }

  // Draws one route; a route's loader returns a promise of the nodes.
  function render() {
    const mine = ++seq;
    const sec = route[0] || 'artists';
    for (const c of chips.children) c.setAttribute('aria-current', c.dataset.sec === sec || (sec === 'artist' && c.dataset.sec === 'artists') ||
      (sec === 'album' && c.dataset.sec === 'albums') || (sec === 'playlist' && c.dataset.sec === 'playlists') ||
      (sec === 'podcast' && c.dataset.sec === 'podcasts') ? 'page' : 'false');
    const loader = LOADERS[sec] || LOADERS.artists;
    const ctx = { page, go, rerender: render };
    Promise.resolve(loader(route.slice(1).map(decodeURIComponent), ctx)).then((nodes) => {
      if (mine !== seq) return;
      clear(body).appendChild(h('div', null, nodes));
    }, (e) => {
      if (mine !== seq) return;
      toast(errText(e));
      clear(body).appendChild(h('div', null, page('Library'), emptyNote(errText(e))));
    });
  }

  el.route = (parts) => { route = parts.length ? parts : ['artists']; render(); };
  el.refresh = render;
  return el;
}

function artistsPage(_, ctx) {
  return call('library.artists').then((r) => {
    const list = r.artists || [];
    return [ctx.page('Artists'), list.length ? h('ul.list', null, list.map((a) =>
      h('li.row', { 'data-test': 'artist-row' }, h('button.main', { type: 'button', onclick: () => ctx.go('library/artist/' + encodeURIComponent(a.name)) },
        h('span.txt', null, h('span.t', { text: a.name }), h('span.s', { text: plural(a.albums, 'album') + ' · ' + plural(a.tracks, 'track') })))))) :
      emptyNote('No artists in the library yet.')];
  });
}

function albumGrid(albums, ctx, showArtist) {
  return h('div.grid', null, albums.map((al) => h('button.tile', { type: 'button', 'data-test': 'album-tile', 'data-album': al.name,
    onclick: () => ctx.go('library/album/' + encodeURIComponent(al.artist || '') + '/' + encodeURIComponent(al.name)) },
  art(al.coverHash, al.name), h('span.t', { text: al.name }),
  h('span.s', { text: [showArtist ? al.artist : null, al.year].filter(Boolean).join(' · ') || plural(al.tracks, 'track') }))));
}

function albumsPage(_, ctx) {
  return call('library.albums').then((r) => {
    const list = r.albums || [];
    return [ctx.page('Albums'), list.length ? albumGrid(list, ctx, true) : emptyNote('No albums in the library yet.')];
  });
}

function artistPage(args, ctx) {
  const name = args[0] || '';
  return call('library.albums', { artist: name }).then((r) => {
    const list = r.albums || [];
    return [ctx.page(name, true), list.length ? albumGrid(list, ctx, false) : emptyNote('No albums by ' + name + '.')];
  });
}

function albumPage(args, ctx) {
  const artist = args[0] || '', album = args[1] || '';
  const params = { album };
  if (artist) params.artist = artist;
  return call('library.albumTracks', params).then((r) => {
    const tracks = r.tracks || [];
    const first = tracks[0] || {};
    const ids = tracks.map((t) => t.id);
    const total = tracks.reduce((s, t) => s + (t.duration || 0), 0);
    return [ctx.page(album, true),
      h('div.albumhead', null, art(first.coverHash, album, 'mid'),
        h('div', null,
          h('p.t', { text: album }),
          h('p.s', null, artist ? h('a', { href: '#/library/artist/' + encodeURIComponent(artist), text: artist }) : null),
          h('p.s', { text: [first.year, plural(tracks.length, 'track'), fmtTime(total)].filter(Boolean).join(' · ') }),
          h('div.row', null,
            h('button.btn.primary', { type: 'button', 'data-test': 'album-play', disabled: !ids.length, onclick: () => addToQueue({ trackIds: ids }, 'play') }, icon('play'), 'Play'),
            h('button.btn', { type: 'button', 'data-test': 'album-add', disabled: !ids.length, onclick: () => addToQueue({ trackIds: ids }, 'end', album) }, icon('plus'), 'Add')))),
      trackList(tracks, { sub: (t) => (t.trackNumber ? t.trackNumber + '. ' : '') + (t.artist || '') })];
  });
}

function favouritesPage(_, ctx) {
  return call('favourites.list').then((r) => {
    const list = r.favourites || [];
    const ids = list.map((t) => t.id);
    return [ctx.page('Favourites', false, list.length ? [h('button.btn', { type: 'button', onclick: () => addToQueue({ trackIds: ids }, 'end', 'Favourites') }, icon('plus'), 'Add all')] : null),
      list.length ? trackList(list, { extra: (t) => iconButton('heartF', 'Unlike ' + t.title, 'unlike', () =>
        call('favourites.unlike', { id: t.id }).then(() => ctx.rerender(), (e) => toast(errText(e))), 'liked') }) :
        emptyNote('No favourites yet: tap the heart on Now playing.')];
  });
}

function historyPage(_, ctx) {
  return call('history.list', { limit: 100 }).then((r) => {
    const list = r.plays || [];
    return [ctx.page('History'), list.length ? trackList(list, { sub: (t) => [t.artist, when(t.startedAt)].filter(Boolean).join(' · ') }) :
      emptyNote('Nothing played yet.')];
  });
}

function when(ms) {
  if (!ms) return '';
  const d = new Date(ms), now = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === now.toDateString() ? time : d.toLocaleDateString([], { day: 'numeric', month: 'short' }) + ' ' + time;
}

const LOADERS = {
  artists: artistsPage, artist: artistPage, albums: albumsPage, album: albumPage,
  playlists: playlistsPage, playlist: playlistPage, favourites: favouritesPage, history: historyPage, radio: radioPage,
  podcasts: podcastsPage, podcast: podcastPage,
};
