// Library: artists → albums → tracks, an albums grid with covers, and the
// sections that share its sub-navigation: playlists, favourites, history,
// radio, podcasts. Routes: #/library/<section>[/…].

import { h, clear, art, toast, errText, emptyNote, icon, iconButton, fmtTime, focusHeading } from './ui.js';
import { t, count, date, time } from './i18n.js';
import { call } from './rpc.js';
import { trackList } from './tracks.js';
import { addToQueue } from './actions.js';
import { playlistsPage, playlistPage } from './playlists.js';
import { radioPage } from './radio.js';
import { podcastsPage, podcastPage } from './podcasts.js';

const SECTIONS = ['artists', 'albums', 'playlists', 'favourites', 'history', 'radio', 'podcasts'];

export function createLibrary(go) {
  const chips = h('nav.chips.sub', { 'aria-label': t('lib.sections') }, SECTIONS.map((id) =>
    h('button.chip', { type: 'button', 'data-test': 'lib-' + id, 'data-sec': id, onclick: () => go('library/' + id) }, t('lib.' + id))));
  const body = h('div.libbody');
  const el = h('section.view', { id: 'view-library', 'aria-label': t('lib.title') }, chips, body);
  let route = ['artists'];
  let seq = 0;
  let focusWhenDrawn = false; // a route the person went to: its heading takes focus once drawn

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
      (sec === 'album' && c.dataset.sec === 'albums') || (sec === 'playlist' && c.dataset.sec === 'playlists') ||
      (sec === 'podcast' && c.dataset.sec === 'podcasts') ? 'page' : 'false');
    const loader = LOADERS[sec] || LOADERS.artists;
    const ctx = { page, go, rerender: render };
    Promise.resolve(loader(route.slice(1).map(decodeURIComponent), ctx)).then((nodes) => {
      if (mine !== seq) return;
      clear(body).appendChild(h('div', null, nodes));
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
    return [ctx.page(t('lib.artists')), list.length ? h('ul.list', null, list.map((a) =>
      h('li.row', { 'data-test': 'artist-row' }, h('button.main', { type: 'button', onclick: () => ctx.go('library/artist/' + encodeURIComponent(a.name)) },
        h('span.txt', null, h('span.t', { text: a.name }), h('span.s', { text: count('count.albums', a.albums) + ' · ' + count('count.tracks', a.tracks) })))))) :
      emptyNote(t('lib.noArtists'))];
  });
}

function albumGrid(albums, ctx, showArtist) {
  return h('div.grid', null, albums.map((al) => h('button.tile', { type: 'button', 'data-test': 'album-tile', 'data-album': al.name,
    onclick: () => ctx.go('library/album/' + encodeURIComponent(al.artist || '') + '/' + encodeURIComponent(al.name)) },
  art(al.coverHash, al.name), h('span.t', { text: al.name }),
  h('span.s', { text: [showArtist ? al.artist : null, al.year].filter(Boolean).join(' · ') || count('count.tracks', al.tracks) }))));
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
  artists: artistsPage, artist: artistPage, albums: albumsPage, album: albumPage,
  playlists: playlistsPage, playlist: playlistPage, favourites: favouritesPage, history: historyPage, radio: radioPage,
  podcasts: podcastsPage, podcast: podcastPage,
};
