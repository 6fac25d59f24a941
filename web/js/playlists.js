// Playlists: list, new, M3U import (a picked file's text goes to
// playlists.import as content), and one playlist: play, add to queue,
// rename, export as an .m3u download, delete; move an entry up or down
// (focus stays on it, and where it went is said) or remove it. Tracks are
// added to a playlist from any track list (tracks.js: addToPlaylist).

import { h, toast, errText, emptyNote, icon, iconButton, ask, confirmBox } from './ui.js';
import { t, count } from './i18n.js';
import { call } from './rpc.js';
import { trackRow } from './tracks.js';
import { remember } from './store.js';
import { addToQueue } from './actions.js';

const MAX_IMPORT = 1024 * 1024; // playlists.import takes at most 1 MiB of M3U (rpc.js says so if its JSON is over the message limit)

export function playlistsPage(_, ctx) {
  const file = h('input', { type: 'file', accept: '.m3u,.m3u8,audio/x-mpegurl,audio/mpegurl,text/plain', hidden: true, 'data-test': 'playlist-file',
    onchange: () => { if (file.files[0]) importFile(file.files[0], ctx); file.value = ''; } });
  return call('playlists.list').then((r) => {
    const list = r.playlists || [];
    return [ctx.page(t('lib.playlists'), false, [
      h('button.btn', { type: 'button', 'data-test': 'playlist-import', onclick: () => file.click() }, icon('upload'), t('pl.import')),
      h('button.btn', { type: 'button', 'data-test': 'playlist-new', onclick: () => create(ctx) }, icon('plus'), t('ui.new'))]), file,
    list.length ? h('ul.list', null, list.map((p) => h('li.row', { 'data-test': 'playlist-row', 'data-id': p.id },
      h('button.main', { type: 'button', onclick: () => ctx.go('library/playlist/' + p.id) },
        h('span.txt', null, h('span.t', { text: p.name }), h('span.s', { text: count('count.tracks', p.entries) }))),
      iconButton('play', t('pl.play', { name: p.name }), 'playlist-play', () => addToQueue({ playlist: p.id }, 'play')),
      iconButton('plus', t('pl.addToQueue', { name: p.name }), 'playlist-add', () => addToQueue({ playlist: p.id }, 'end', p.name))))) :
      emptyNote(t('pl.none'))];
  });
}

function create(ctx) {
  ask(t('pl.new'), '', t('ui.create')).then((name) => {
    if (name) call('playlists.create', { name }).then((p) => ctx.go('library/playlist/' + p.id), (e) => toast(errText(e)));
  });
}

function importFile(f, ctx) {
  if (f.size > MAX_IMPORT) { toast(t('pl.tooLarge', { name: f.name, size: Math.round(f.size / 1024) })); return; }
  const reader = new FileReader();
  reader.onerror = () => toast(t('pl.unreadable', { name: f.name }));
  reader.onload = () => {
    const name = f.name.replace(/\.m3u8?$/i, '') || t('pl.imported.default');
    call('playlists.import', { content: String(reader.result), name }).then((r) => {
      const lost = (r.unresolved || []).length;
      const tracks = count('count.tracks', r.added);
      toast(lost ? t('pl.importedMissing', { name: r.name, tracks, missing: lost }) : t('pl.imported', { name: r.name, tracks }), lost ? 'error' : 'info');
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
    if (!pl) return [ctx.page(t('pl.playlist'), true), emptyNote(t('pl.gone'))];
    const entries = r.entries || [];
    return [ctx.page(pl.name, true),
      h('div.row.wrap', null,
        h('button.btn.primary', { type: 'button', 'data-test': 'playlist-play', disabled: !entries.length, onclick: () => addToQueue({ playlist: id }, 'play') }, icon('play'), t('ui.play')),
        h('button.btn', { type: 'button', 'data-test': 'playlist-add', disabled: !entries.length, onclick: () => addToQueue({ playlist: id }, 'end', pl.name) }, icon('plus'), t('ui.add')),
        h('button.btn', { type: 'button', 'data-test': 'playlist-rename', onclick: () => rename(pl, ctx) }, icon('edit'), t('ui.rename')),
        h('button.btn', { type: 'button', 'data-test': 'playlist-export', onclick: () => exportM3U(pl) }, icon('download'), t('pl.export')),
        h('button.btn.danger', { type: 'button', 'data-test': 'playlist-delete', onclick: () => del(pl) }, icon('trash'), t('ui.delete'))),
      entries.length ? entryList(entries, pl, ctx) : emptyNote(t('pl.empty')), said];
  });
}

// Where a moved entry went, said by a screen reader (focus stays on the entry's button).
const said = h('p.sr', { role: 'status', 'aria-live': 'polite', 'data-test': 'playlist-said' });

function entryList(entries, pl, ctx) {
  remember(entries);
  const last = entries.length - 1;
  const move = (tr, to, test) => {
    if (to < 0 || to > last) { toast(t(to < 0 ? 'queue.first' : 'queue.last'), 'info'); return; }
    call('playlists.move', { id: pl.id, from: tr.index, to }).then(() => {
      said.textContent = t('queue.moved', { title: tr.title, n: to + 1 });
      ctx.focusAfter((body) => {
        const b = body.querySelector('li[data-key="' + to + '"] [data-test="' + test + '"]');
        if (b) b.focus();
      });
      ctx.rerender();
    }, (e) => toast(errText(e)));
  };
  return h('ul.list', { 'data-test': 'playlist-entries' }, entries.map((tr) => {
    const li = trackRow(tr, { test: 'playlist-entry', plain: true, extra: () => [
      iconButton('up', t('queue.up', { title: tr.title }), 'playlist-up', () => move(tr, tr.index - 1, 'playlist-up'), tr.index === 0 ? 'dim' : null),
      iconButton('down', t('queue.down', { title: tr.title }), 'playlist-down', () => move(tr, tr.index + 1, 'playlist-down'), tr.index === last ? 'dim' : null),
      iconButton('x', t('pl.removeFrom', { title: tr.title, name: pl.name }), 'playlist-remove',
        () => call('playlists.remove', { id: pl.id, index: tr.index }).then(() => ctx.rerender(), (e) => toast(errText(e))))] });
    li.dataset.key = String(tr.index);
    li.dataset.index = String(tr.index);
    return li;
  }));
}

function rename(pl, ctx) {
  ask(t('pl.renameAsk', { name: pl.name }), pl.name, t('ui.rename')).then((name) => {
    if (name && name !== pl.name) call('playlists.rename', { id: pl.id, name }).then(() => ctx.rerender(), (e) => toast(errText(e)));
  });
}

function del(pl) {
  confirmBox(t('pl.deleteAsk', { name: pl.name }), t('ui.delete')).then((yes) => {
    if (yes) call('playlists.delete', { id: pl.id }).then(() => { toast(t('pl.deleted', { name: pl.name }), 'info'); history.back(); }, (e) => toast(errText(e)));
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
