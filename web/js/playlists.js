// Playlists: list, new, M3U import (a picked file's text goes to
// playlists.import as content), and one playlist: play, add to queue,
// rename, export as an .m3u download, delete, remove an entry.

import { h, toast, errText, emptyNote, icon, iconButton, plural, ask, confirmBox } from './ui.js';
import { call } from './rpc.js';
import { trackList } from './tracks.js';
import { addToQueue } from './actions.js';

const MAX_IMPORT = 1024 * 1024; // playlists.import takes at most 1 MiB of M3U (rpc.js says so if its JSON is over the message limit)

export function playlistsPage(_, ctx) {
  const file = h('input', { type: 'file', accept: '.m3u,.m3u8,audio/x-mpegurl,audio/mpegurl,text/plain', hidden: true, 'data-test': 'playlist-file',
    onchange: () => { if (file.files[0]) importFile(file.files[0], ctx); file.value = ''; } });
  return call('playlists.list').then((r) => {
    const list = r.playlists || [];
    return [ctx.page('Playlists', false, [
      h('button.btn', { type: 'button', 'data-test': 'playlist-import', onclick: () => file.click() }, icon('upload'), 'Import'),
      h('button.btn', { type: 'button', 'data-test': 'playlist-new', onclick: () => create(ctx) }, icon('plus'), 'New')]), file,
    list.length ? h('ul.list', null, list.map((p) => h('li.row', { 'data-test': 'playlist-row', 'data-id': p.id },
      h('button.main', { type: 'button', onclick: () => ctx.go('library/playlist/' + p.id) },
        h('span.txt', null, h('span.t', { text: p.name }), h('span.s', { text: plural(p.entries, 'track') }))),
      iconButton('play', 'Play ' + p.name, 'playlist-play', () => addToQueue({ playlist: p.id }, 'play')),
      iconButton('plus', 'Add ' + p.name + ' to the queue', 'playlist-add', () => addToQueue({ playlist: p.id }, 'end', p.name))))) :
      emptyNote('No playlists yet. Save the queue as one, or import an M3U file.')];
  });
}

function create(ctx) {
  ask('New playlist', '', 'Create').then((name) => {
    if (name) call('playlists.create', { name }).then((p) => ctx.go('library/playlist/' + p.id), (e) => toast(errText(e)));
  });
}

function importFile(f, ctx) {
  if (f.size > MAX_IMPORT) { toast('“' + f.name + '” is too large to send (' + Math.round(f.size / 1024) + ' KiB; at most 1 MiB)'); return; }
  const reader = new FileReader();
  reader.onerror = () => toast('Could not read “' + f.name + '”');
  reader.onload = () => {
    const name = f.name.replace(/\.m3u8?$/i, '') || 'Imported';
    call('playlists.import', { content: String(reader.result), name }).then((r) => {
      const lost = (r.unresolved || []).length;
      toast('Imported “' + r.name + '”: ' + plural(r.added, 'track') + (lost ? ', ' + lost + ' not found in the library' : ''), lost ? 'error' : 'info');
      ctx.rerender();
    }, (e) => toast(errText(e)));
  };
  reader.readAsText(f);
}

export function playlistPage(args, ctx) {
  const id = +args[0];
  return Promise.all([call('playlists.list'), call('playlists.entries', { id })]).then(([l, r]) => {
    let pl = null;
    for (const p of l.playlists || []) if (p.id === id) pl = p;
    if (!pl) return [ctx.page('Playlist', true), emptyNote('This playlist does not exist any more.')];
    const entries = r.entries || [];
    return [ctx.page(pl.name, true),
      h('div.row.wrap', null,
        h('button.btn.primary', { type: 'button', 'data-test': 'playlist-play', disabled: !entries.length, onclick: () => addToQueue({ playlist: id }, 'play') }, icon('play'), 'Play'),
        h('button.btn', { type: 'button', 'data-test': 'playlist-add', disabled: !entries.length, onclick: () => addToQueue({ playlist: id }, 'end', pl.name) }, icon('plus'), 'Add'),
        h('button.btn', { type: 'button', 'data-test': 'playlist-rename', onclick: () => rename(pl, ctx) }, icon('edit'), 'Rename'),
        h('button.btn', { type: 'button', 'data-test': 'playlist-export', onclick: () => exportM3U(pl) }, icon('download'), 'Export'),
        h('button.btn.danger', { type: 'button', 'data-test': 'playlist-delete', onclick: () => del(pl) }, icon('trash'), 'Delete')),
      entries.length ? trackList(entries, { extra: (t) => iconButton('x', 'Remove ' + t.title + ' from ' + pl.name, 'playlist-remove',
        () => call('playlists.remove', { id, index: t.index }).then(() => ctx.rerender(), (e) => toast(errText(e)))) }) :
        emptyNote('This playlist is empty.')];
  });
}

function rename(pl, ctx) {
  ask('Rename “' + pl.name + '”', pl.name, 'Rename').then((name) => {
    if (name && name !== pl.name) call('playlists.rename', { id: pl.id, name }).then(() => ctx.rerender(), (e) => toast(errText(e)));
  });
}

function del(pl) {
  confirmBox('Delete the playlist “' + pl.name + '”?', 'Delete').then((yes) => {
    if (yes) call('playlists.delete', { id: pl.id }).then(() => { toast('Deleted “' + pl.name + '”', 'info'); history.back(); }, (e) => toast(errText(e)));
  });
}

function exportM3U(pl) {
  call('playlists.m3u', { id: pl.id }).then((r) => {
    const blob = new Blob([r.m3u], { type: 'audio/x-mpegurl' });
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: (r.name || pl.name).replace(/[\\/:*?"<>|]+/g, '_') + '.m3u' });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }, (e) => toast(errText(e)));
}
