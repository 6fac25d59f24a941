// The page's copy of the leader's state, filled from replies and
// notifications, and a tiny publish/subscribe so each screen redraws
// what changed.

export const S = {
  connected: false,
  group: 'main',     // the group this phone controls (id)
  status: null,      // player.status of that group
  statusAt: 0,       // performance.now() when status arrived
  queue: null,       // queue.list of that group
  rooms: [],         // rooms.list .rooms
  groups: [],        // groups.list .groups
  party: false,
  speakers: null,    // speakers.list (paired and pending), null for a guest
  tracks: new Map(), // path -> library track (for queue rows)
  liked: new Map(),  // track id -> liked
};

const subs = {};
export function on(key, fn) {
  (subs[key] || (subs[key] = [])).push(fn);
}
export function emit(key, arg) {
  const list = subs[key];
  if (list) for (const fn of list.slice()) fn(arg);
}
export function set(key, value) {
  S[key] = value;
  if (key === 'status') S.statusAt = performance.now();
  emit(key, value);
}

// Where the player is now: the last status advanced by the time since it
// arrived while playing (local rendering between notifications).
export function position() {
  const s = S.status;
  if (!s) return 0;
  let p = s.position || 0;
  // Track time: at 1.5× a second heard is 1.5 s of the track.
  if (s.state === 'playing') p += (s.speed || 1) * (performance.now() - S.statusAt) / 1000;
  if (s.duration > 0 && p > s.duration) p = s.duration;
  return p;
}

export const isPlaying = (s) => !!s && (s.state === 'playing' || s.state === 'loading' || s.state === 'buffering');

export function groupById(id) {
  for (const g of S.groups) if (g.id === id) return g;
  return null;
}

export function remember(tracks) {
  if (tracks) for (const t of tracks) if (t && t.path) S.tracks.set(t.path, t);
}
