// Now playing: artwork, title, artist, album, seek bar, transport (±15 s
// for podcasts and audiobooks), shuffle, repeat, like, save a network track
// for offline, and which group this phone controls (the group picker).
// Also the mini player shown above the tab bar on the other screens, and
// the volume of each room of the controlled group (as on Rooms).

import { h, icon, iconButton, art, fmtTime, clear, toast, errText, throttle } from './ui.js';
import { S, on, position, isPlaying, groupById } from './store.js';
import { call, act } from './rpc.js';
import { player, toggle, saveOffline } from './actions.js';
import { t } from './i18n.js';

const STATES = ['playing', 'paused', 'stopped', 'idle', 'loading', 'buffering', 'error'];
const stateWords = (state) => (STATES.indexOf(state) >= 0 ? t('state.' + state) : state);
const NEXT_REPEAT = { off: 'all', all: 'one', one: 'off' };

export function createNowPlaying(selectGroup) {
  const picker = h('select.picker', { 'data-test': 'group-picker', 'aria-label': t('now.groupPicker'),
    onchange: () => selectGroup(picker.value) });
  const where = h('span.where', { 'data-test': 'np-rooms' });
  const artBox = h('div.np-art');
  const title = h('h1.np-title', { 'data-test': 'np-title' });
  const artist = h('p.np-artist', { 'data-test': 'np-artist' });
  const album = h('p.np-album', { 'data-test': 'np-album' });
  const stateEl = h('p.np-state', { 'data-test': 'np-state', 'aria-live': 'polite' });
  const like = iconButton('heart', t('now.like'), 'like', onLike, 'like');
  const seek = h('input.seek', { type: 'range', min: '0', max: '1', step: 'any', value: '0', 'data-test': 'seek', 'aria-label': t('now.position') });
  const tPos = h('span', { 'data-test': 'np-position' }), tDur = h('span', { 'data-test': 'np-duration' });
  const shuffle = iconButton('shuffle', t('now.shuffle'), 'shuffle', () => player('player.shuffle', { on: !(S.status && S.status.shuffle) }), 'toggle');
  const repeat = iconButton('repeat', t('now.repeat.off'), 'repeat', () => player('player.repeat', { mode: NEXT_REPEAT[(S.status && S.status.repeat) || 'off'] || 'off' }), 'toggle');
  const prev = iconButton('prev', t('now.previous'), 'prev', () => player('player.previous'));
  const next = iconButton('next', t('now.next'), 'next', () => player('player.next'));
  const play = iconButton('play', t('ui.play'), 'play-pause', toggle, 'big');
  const skip = (name, label, test, by) => {
    const b = iconButton(name, label, test, () => player('player.seek', { by }), 'skip');
    b.appendChild(h('b', { 'aria-hidden': 'true', text: '15' }));
    return b;
  };
  const back = skip('back15', t('now.skipBack'), 'skip-back', -15);
  const forward = skip('fwd15', t('now.skipForward'), 'skip-forward', 15);
  const offline = iconButton('offline', t('offline.save'), 'np-offline', () => { const f = S.status && S.status.file; if (f) saveOffline(f, offline); });
  const volumes = h('div.np-vol', { role: 'group', 'aria-label': t('now.volume'), 'data-test': 'np-volumes' });

  const el = h('section.view.now', { id: 'view-now', 'aria-label': t('now.title') },
    h('div.np-top', null, h('label.where-l', null, h('span', { text: t('now.playingIn') }), picker), where),
    artBox,
    h('div.np-meta', null, h('div.np-text', null, title, artist, album), offline, like),
    stateEl,
    h('div.np-seek', null, seek, h('div.times', null, tPos, tDur)),
    h('div.np-ctl', null, shuffle, back, prev, play, next, forward, repeat),
    volumes);

  let dragging = false;
  seek.addEventListener('input', () => { dragging = true; tPos.textContent = fmtTime(+seek.value); });
  seek.addEventListener('change', () => {
    dragging = false;
    player('player.seek', { position: Math.max(0, +seek.value) });
  });

  let shownCover = null, shownTrackId = null;
  function render() {
    const s = S.status || { state: 'idle' };
    const idle = s.state === 'idle';
    title.textContent = s.title || (idle ? t('now.nothing') : (s.file || '').split('/').pop() || t('now.untitled'));
    artist.textContent = s.station ? s.station : (s.artist || '');
    album.textContent = s.station ? t('now.radio') : (s.album || '');
    let words = stateWords(s.state);
    if (s.source) words = s.source + ' · ' + words; // "AirPlay from Anna's iPhone · Playing"
    if (s.error) words = s.state === 'error' ? t('now.stoppedBy', { error: s.error }) : t('now.lastError', { state: words, error: s.error });
    if (s.warning) words += ' · ' + s.warning; // the leader cannot save its state (a full disk)
    stateEl.textContent = words;
    stateEl.dataset.state = s.state;
    stateEl.classList.toggle('bad', !!(s.error || s.warning));
    const coverKey = (s.coverHash || '') + '|' + (s.album || s.title || '');
    if (coverKey !== shownCover) {
      shownCover = coverKey;
      clear(artBox).appendChild(art(s.coverHash, s.album || s.title || '', 'big'));
    }
    const p = isPlaying(s);
    swapIcon(play, p ? 'pause' : 'play', t(p ? 'ui.pause' : 'ui.play'));
    play.dataset.state = s.state;
    shuffle.setAttribute('aria-pressed', String(!!s.shuffle));
    const mode = s.repeat || 'off';
    swapIcon(repeat, mode === 'one' ? 'repeat1' : 'repeat', t('now.repeat.' + (mode === 'all' || mode === 'one' ? mode : 'off')));
    repeat.setAttribute('aria-pressed', String(mode !== 'off'));
    repeat.dataset.mode = mode;
    prev.disabled = next.disabled = idle;
    seek.disabled = back.disabled = forward.disabled = !(s.duration > 0);
    // A network track (a podcast episode, a file URL) can be kept on the leader; a library file is there already.
    const net = /^https?:\/\//i.test(s.file || '');
    offline.hidden = !net;
    if (net && offline.dataset.file !== s.file) {
      offline.dataset.file = s.file;
      delete offline.dataset.saved;
      const label = t('offline.saveName', { name: s.title || (s.file || '').split('/').pop() });
      offline.setAttribute('aria-label', label);
      offline.title = label;
    }
    seek.max = String(s.duration > 0 ? s.duration : 1);
    tDur.textContent = s.duration > 0 ? fmtTime(s.duration) : (s.station ? t('now.live') : '');
    if (s.trackId !== shownTrackId) {
      shownTrackId = s.trackId;
      showLiked();
      if (s.trackId !== undefined) { // asked each time: another phone may have liked it
        const id = s.trackId;
        call('library.track', { id }).then((tr) => { S.liked.set(id, !!tr.liked); showLiked(); }, (e) => toast(errText(e)));
      }
    }
    like.disabled = s.trackId === undefined;
    tick();
  }

  function showLiked() {
    const id = S.status && S.status.trackId;
    const liked = id !== undefined && S.liked.get(id) === true;
    swapIcon(like, liked ? 'heartF' : 'heart', t(liked ? 'now.unlike' : 'now.like'));
    like.setAttribute('aria-pressed', String(liked));
  }

  function onLike() {
    const id = S.status && S.status.trackId;
    if (id === undefined) return;
    const liked = S.liked.get(id) === true;
    act(liked ? 'favourites.unlike' : 'favourites.like', { id }).then((r) => {
      if (!r) return;
      S.liked.set(id, !!r.liked);
      showLiked();
      toast(t(r.liked ? 'now.liked' : 'now.unliked'), 'info');
    });
  }

  function tick() {
    if (dragging) return;
    const p = position();
    seek.value = String(p);
    tPos.textContent = S.status && S.status.state !== 'idle' ? fmtTime(p) : '';
  }

  function renderGroups() {
    clear(picker);
    for (const g of S.groups) picker.appendChild(h('option', { value: g.id, text: g.rooms.length ? g.name : t('now.noRooms', { name: g.name }) }));
    if (!groupById(S.group)) picker.appendChild(h('option', { value: S.group, text: S.group }));
    picker.value = S.group;
    const g = groupById(S.group);
    where.textContent = g ? (g.rooms.length ? g.rooms.join(', ') : t('now.silent')) : '';
    renderVolumes();
  }

  // A slider per room of the controlled group, updated in place (never
  // under a finger), as the room cards on Rooms are.
  const sliders = new Map();
  function renderVolumes() {
    const g = groupById(S.group);
    const names = g ? g.rooms.slice().sort() : [];
    for (const [name, v] of sliders) if (names.indexOf(name) < 0) { v.row.remove(); sliders.delete(name); }
    let prevRow = null;
    for (const name of names) {
      let v = sliders.get(name);
      if (!v) { v = volumeRow(name); sliders.set(name, v); }
      const want = prevRow ? prevRow.nextSibling : volumes.firstChild;
      if (want !== v.row) volumes.insertBefore(v.row, want);
      prevRow = v.row;
      const room = S.rooms.find((r) => r.name === name);
      v.row.classList.toggle('offline', !room || !room.connected);
      if (room && !v.dragging) { v.slider.value = String(room.volume); v.text.textContent = String(room.volume); }
      if (room) v.slider.setAttribute('aria-valuetext', room.volume + '%');
    }
    volumes.hidden = !names.length;
  }

  function volumeRow(name) {
    const v = { dragging: false };
    v.slider = h('input.vol', { type: 'range', min: '0', max: '100', step: '1', 'data-test': 'np-room-volume', 'data-room': name,
      'aria-label': t('rooms.volumeOf', { name }) });
    v.text = h('span.num', { 'data-test': 'np-room-volume-value' });
    const send = throttle((x) => call('rooms.set', { room: name, volume: x }).then(null, (e) => toast(errText(e))), 120);
    v.slider.addEventListener('input', () => { v.dragging = true; v.text.textContent = v.slider.value; v.slider.setAttribute('aria-valuetext', v.slider.value + '%'); send(+v.slider.value); });
    v.slider.addEventListener('change', () => { send(+v.slider.value); setTimeout(() => { v.dragging = false; }, 400); });
    v.row = h('div.vrow', { 'data-test': 'np-volume', 'data-room': name }, h('span.lbl', { text: name }), v.slider, v.text);
    return v;
  }

  on('status', render);
  on('groups', renderGroups);
  on('rooms', renderVolumes);
  on('tick', tick);
  on('liked', showLiked);
  render();
  return el;
}

export function swapIcon(btn, name, label) {
  if (btn.dataset.icon === name && btn.getAttribute('aria-label') === label) return;
  btn.dataset.icon = name;
  btn.replaceChild(icon(name), btn.firstChild);
  btn.setAttribute('aria-label', label);
  btn.title = label;
}

export function createMiniPlayer(go) {
  const tl = h('span.t', { 'data-test': 'mini-title' }), s = h('span.s');
  const play = iconButton('play', t('ui.play'), 'mini-play', toggle);
  const bar = h('div.mini-bar');
  const box = h('div.art-slot');
  let cover = null;
  const el = h('div.mini', { id: 'mini' },
    h('button.main', { type: 'button', 'aria-label': t('now.show'), onclick: () => go('now') }, box, h('span.txt', null, tl, s)),
    play, bar);
  function render() {
    const st = S.status || { state: 'idle' };
    el.hidden = st.state === 'idle' && !st.title;
    tl.textContent = st.title || t('now.nothing');
    s.textContent = st.station || [st.artist, STATES.indexOf(st.state) >= 0 ? t('state.' + st.state) : null].filter(Boolean).join(' · ');
    const key = (st.coverHash || '') + '|' + (st.album || st.title || '');
    if (cover !== key) { cover = key; clear(box).appendChild(art(st.coverHash, st.album || st.title || '', 'sm')); }
    const p = isPlaying(st);
    swapIcon(play, p ? 'pause' : 'play', t(p ? 'ui.pause' : 'ui.play'));
    tick();
  }
  function tick() {
    const st = S.status;
    bar.style.width = st && st.duration > 0 ? (100 * position() / st.duration).toFixed(2) + '%' : '0';
  }
  on('status', render);
  on('tick', tick);
  render();
  return el;
}
