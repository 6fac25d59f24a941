// What the screens ask the leader to do, in one place: transport, queue
// additions, and keeping the controlled group's state fresh.

import { S, set, emit, remember, isPlaying } from './store.js';
import { call, act, gp } from './rpc.js';
import { toast, errText } from './ui.js';
import { t, count, bytes } from './i18n.js';

// A reply carrying a player status for the controlled group updates the page at once.
export function applyStatus(r, group) {
  if (r && r.state && (group || 'main') === S.group) set('status', r);
  return r;
}

export function player(method, params) {
  const g = S.group;
  return act(method, gp(params)).then((r) => { applyStatus(r, g); afterEdit(g); return r; });
}

export function toggle() {
  return player(isPlaying(S.status) ? 'player.pause' : 'player.play');
}

// Groups other than the main one have no player.changed/queue.changed of
// their own: the page reads their state after groups.changed and after its own edits.
let refetching = false, again = false;
export function refreshGroup() {
  if (refetching) { again = true; return Promise.resolve(); }
  refetching = true;
  const g = S.group;
  return Promise.all([call('player.status', gp()), call('queue.list', gp())]).then(([st, q]) => {
    if (g !== S.group) return;
    set('status', st);
    setQueue(q);
  }, (e) => toast(errText(e))).then(() => {
    refetching = false;
    if (again) { again = false; refreshGroup(); }
  });
}

function afterEdit(g) {
  if (g !== 'main' && g === S.group) refreshGroup();
}

export function setQueue(q) {
  set('queue', q);
  loadQueueTracks(q);
}

// Queue entries are only URIs: titles come from library.track, once per path.
const asked = new Set();
export function forgetTracks() { // the library changed: read titles again
  asked.clear();
  S.tracks.clear();
  if (S.queue) loadQueueTracks(S.queue);
}
function loadQueueTracks(q) {
  if (!q || !q.entries) return;
  const want = [];
  for (const e of q.entries) {
    const u = e.uri;
    if (S.tracks.has(u) || asked.has(u) || /^[a-z]+:\/\//i.test(u)) continue;
    asked.add(u);
    want.push(u);
  }
  let i = 0;
  const next = () => {
    if (i >= want.length) return Promise.resolve();
    const path = want[i++];
    return call('library.track', { path }).then((tr) => { remember([tr]); emit('tracks'); },
      () => { S.tracks.set(path, null); }).then(next);
  };
  for (let k = 0; k < 6; k++) next(); // six requests in flight at most
}

// Adds tracks (trackIds, uris, playlist, album…) to the controlled group's queue.
// how: 'end' (default), 'next', or 'play' (insert next and start it now).
export function addToQueue(what, how, label) {
  const g = S.group;
  const params = Object.assign({}, what);
  if (how === 'next' || how === 'play') params.next = true;
  return call('queue.add', gp(params)).then((r) => {
    const added = (r && r.added) || [];
    if (!added.length) { toast(t('add.nothing')); return; }
    if (how !== 'play') {
      applyStatus(r, g);
      afterEdit(g);
      const text = t(how === 'next' ? 'add.next' : 'add.end', { tracks: count('count.tracks', added.length) });
      toast(label ? t('add.labelled', { label, text }) : text, 'info');
      return;
    }
    return call('queue.list', gp()).then((q) => {
      let index = -1;
      for (const e of q.entries) if (e.id === added[0]) index = e.index;
      if (index < 0) throw new Error(t('add.gone'));
      return call('queue.play', gp({ index }));
    }).then((st) => { applyStatus(st, g); afterEdit(g); });
  }).catch((e) => toast(errText(e)));
}

export function trackIds(tracks) {
  return tracks.map((tr) => tr.id);
}

// Saves a network track or stream in the leader's offline cache (cache.add,
// which answers once the whole file is there: minutes for a long episode).
// The button, if given, says it is busy and then that it is saved.
const saving = new Set();
export function saveOffline(url, button) {
  if (saving.has(url)) return Promise.resolve(null);
  saving.add(url);
  let name = url;
  try { name = decodeURIComponent(new URL(url).pathname.split('/').pop()) || new URL(url).host; } catch (e) { /* the URL as typed */ }
  if (button) button.setAttribute('aria-busy', 'true');
  toast(t('offline.saving', { name }), 'info');
  return call('cache.add', { url }, 30 * 60 * 1000).then((e) => {
    toast(t('offline.saved', { name, size: bytes(e.size || 0) }), 'info');
    if (button && button.isConnected) {
      button.setAttribute('aria-label', t('offline.savedName', { name }));
      button.title = t('offline.savedName', { name });
      button.dataset.saved = 'true';
    }
    return e;
  }, (e) => { toast(t('offline.failed', { name, error: errText(e) })); return null; }).finally(() => {
    saving.delete(url);
    if (button) button.removeAttribute('aria-busy');
  });
}
