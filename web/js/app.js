// Tutti's phone app: the tab bar, the hash router (#/now, #/queue,
// #/search, #/library/…, #/rooms), and the wiring of leader notifications
// to the page's state. Everything talks JSON-RPC over /ws (rpc.js).

import { h, icon, toast, errText, focusHeading } from './ui.js';
import { t } from './i18n.js';
import { S, on, emit, set, position, groupById } from './store.js';
import { connect, call, onNotify } from './rpc.js';
import { refreshGroup, setQueue, forgetTracks } from './actions.js';
import { createNowPlaying, createMiniPlayer } from './nowplaying.js';
import { createQueue } from './queue.js';
import { setupMediaSession } from './media.js';

// The tabs, in order; the router, the tab bar and refresh-on-reconnect
// pick them up from this list. Screens other than Now playing and Queue
// are fetched when first shown (or when the pointer or focus reaches their
// tab), not with the first screen (bench/web: its bytes).
const TABS = [
  { id: 'now', label: 'tab.now', icon: 'now', make: () => createNowPlaying(selectGroup) },
  { id: 'queue', label: 'tab.queue', icon: 'queue', make: () => createQueue() },
  { id: 'search', label: 'tab.search', icon: 'search', load: () => import('./search.js').then((m) => m.createSearch(go)) },
  { id: 'library', label: 'tab.library', icon: 'library', load: () => import('./library.js').then((m) => m.createLibrary(go)) },
  // Play here sits on Rooms, under its title: this browser is one more room.
  { id: 'rooms', label: 'tab.rooms', icon: 'rooms', load: () => Promise.all([import('./rooms.js'), import('./playhere.js')]).then(([m, ph]) => {
    const v = m.createRooms(selectGroup, go);
    v.insertBefore(ph.createPlayHere(), v.children[1] || null);
    return v;
  }) },
  { id: 'sound', label: 'tab.sound', icon: 'sound', load: () => import('./sound.js').then((m) => m.createSound(go)) },
  // Reached from Sound, not the tab bar.
  { id: 'tune', label: 'tune.title', icon: 'sound', nav: false, load: () => import('./tune.js').then((m) => m.createTune(go)) },
];

// A screen fetched on demand: resolves once it is in the page.
function ensure(tab) {
  if (views[tab.id]) return Promise.resolve(views[tab.id]);
  if (!tab.loading) {
    tab.loading = tab.load().then((v) => {
      v.hidden = true;
      document.getElementById('views').appendChild(v);
      views[tab.id] = v;
      return v;
    }, (e) => { tab.loading = null; toast(errText(e)); throw e; });
  }
  return tab.loading;
}

const views = {};
let current = null;
let lastLibrary = 'library/artists';

function go(path, replace) {
  const hash = '#/' + path;
  if (location.hash === hash) { route(); return; }
  if (replace) { history.replaceState(null, '', hash); route(); } else location.hash = hash;
}

let lastRoute = null;

function route() {
  const raw = location.hash.replace(/^#\/?/, '').replace(/\/$/, '');
  // A preview belongs to the screen it was started on.
  if (raw !== lastRoute) { emit('route', raw); lastRoute = raw; }
  const parts = raw ? raw.split('/') : []; // inner parts may be empty (an album without an artist)
  let id = parts[0];
  const tab = TABS.find((x) => x.id === id);
  if (!tab) id = 'now';
  else if (!views[id]) { ensure(tab).then(route, () => {}); return; } // the screen before stays until this one is here
  if (id === 'library') lastLibrary = parts.join('/') || 'library/artists';
  for (const tab of TABS) {
    if (views[tab.id]) views[tab.id].hidden = tab.id !== id;
    const b = document.querySelector('[data-test="tab-' + tab.id + '"]');
    if (b) b.setAttribute('aria-current', tab.id === id || (id === 'tune' && tab.id === 'sound') ? 'page' : 'false');
  }
  document.body.dataset.tab = id;
  const v = views[id];
  // A screen the person went to: focus moves to its heading, so a screen
  // reader reads where it is (not on the first screen of a visit). The
  // library draws its pages when their data comes, and focuses them then.
  const moved = current !== null;
  if (v.route) v.route(parts.slice(1), moved);
  else if (current !== id && v.refresh && S.connected) v.refresh();
  if (current !== id) {
    window.scrollTo(0, 0);
    if (moved && !v.route) focusHeading(v);
    if (v.shown) v.shown();
  }
  current = id;
}

function selectGroup(id) {
  if (id === S.group) return;
  S.group = id;
  try { localStorage.setItem('tutti.group', id); } catch (e) { /* not kept */ }
  set('status', null);
  set('queue', null);
  emit('group');
  emit('groups', S.groups);
  if (S.connected) refreshGroup();
}

// On every (re)connection and wake: read everything shown.
function refreshAll() {
  Promise.all([call('groups.list'), call('rooms.list'), call('party.status')]).then(([g, r, p]) => {
    S.party = !!p.party;
    set('groups', g.groups || []);
    set('rooms', r.rooms || []);
    emit('party');
    if (!groupById(S.group)) { S.group = 'main'; emit('group'); emit('groups', S.groups); }
    return refreshGroup();
  }).catch((e) => toast(errText(e)));
  // Pairing requests: only a logged-in page may see and decide them.
  call('speakers.list').then((sp) => set('speakers', sp), () => set('speakers', null));
  const v = views[current];
  if (v && v.refresh) v.refresh();
}

function wire() {
  onNotify('player.changed', (p) => { if (S.group === 'main') set('status', p); });
  onNotify('queue.changed', (p) => { if (S.group === 'main') setQueue(p); });
  onNotify('rooms.changed', (p) => set('rooms', p.rooms || []));
  onNotify('speakers.changed', (p) => set('speakers', p));
  onNotify('groups.changed', (p) => {
    if (p.party !== undefined && !!p.party !== S.party) { S.party = !!p.party; emit('party'); }
    set('groups', p.groups || []);
    if (!groupById(S.group)) {
      toast(t('now.groupGone', { name: (groupById('main') || {}).name || t('now.mainGroup') }), 'info');
      selectGroup('main');
    } else if (S.group !== 'main') refreshGroup();
  });
  onNotify('library.changed', () => { forgetTracks(); if ((current === 'library' || current === 'search') && views[current]) views[current].refresh(); });
  onNotify('playlists.changed', () => { if (current === 'library' && /playlist/.test(lastLibrary) && views.library) views.library.refresh(); });
  onNotify('cache.progress', () => { /* the page starts no downloads into the cache */ });
  on('open', refreshAll);
  // Say when a speaker drops out or comes back (not on the first list), whichever screen shows.
  let online = null;
  on('rooms', () => {
    const now = new Set(S.rooms.filter((r) => r.connected !== false).map((r) => r.name));
    if (online) {
      online.forEach((n) => { if (!now.has(n)) toast(t('rooms.offline', { name: n })); });
      now.forEach((n) => { if (!online.has(n)) toast(t('rooms.online', { name: n }), 'info'); });
    }
    online = now;
  });
  on('connected', (c) => { if (!c) online = null; });
  // A track or stream that failed is said in words once, besides the line on Now playing.
  // An error already there when the page connects is only shown on Now playing.
  let lastError = null, fresh = true;
  on('open', () => { fresh = true; });
  on('status', (s) => {
    if (!s) return;
    const e = s.error || null;
    if (e && e !== lastError && !fresh) toast(e);
    lastError = e;
    fresh = false;
  });
}

// The position advances locally; this wakes the screens each time its
// displayed second changes while playing (rendering only, no requests).
let tickTimer = 0;
function scheduleTick() {
  clearTimeout(tickTimer);
  const s = S.status;
  if (!s || s.state !== 'playing' || document.visibilityState === 'hidden') return;
  const ms = (1 - (position() % 1)) * 1000 + 15;
  tickTimer = setTimeout(() => { emit('tick'); scheduleTick(); }, ms);
}

function start() {
  try { S.group = localStorage.getItem('tutti.group') || 'main'; } catch (e) { S.group = 'main'; }
  const main = document.getElementById('views');
  const nav = document.getElementById('tabs');
  nav.setAttribute('aria-label', t('nav.screens'));
  for (const tab of TABS) {
    if (tab.make) {
      const v = tab.make();
      views[tab.id] = v;
      v.hidden = true;
      main.appendChild(v);
    }
    if (tab.nav === false) continue;
    const early = tab.load ? () => { ensure(tab).catch(() => {}); } : null;
    nav.appendChild(h('button.tab', { type: 'button', 'data-test': 'tab-' + tab.id, 'aria-label': t(tab.label), onpointerenter: early, onfocus: early,
      onclick: () => go(tab.id === 'library' ? lastLibrary : tab.id, tab.id !== 'library') }, icon(tab.icon), h('span', { text: t(tab.label) })));
  }
  const mini = createMiniPlayer((id) => go(id, true));
  document.body.insertBefore(mini, nav);
  wire();
  on('status', scheduleTick);
  document.addEventListener('visibilitychange', () => { scheduleTick(); if (!document.hidden) emit('tick'); });
  window.addEventListener('hashchange', route);
  setupMediaSession();
  // Play here left on: it starts again without a visit to Rooms.
  try { if (localStorage.getItem('tutti.playHere') === '1') import('./playhere.js').catch(() => { /* offline: Rooms fetches it again */ }); } catch (e) { /* not kept */ }
  route();
  connect();
}

start();
