// Now playing: artwork, title, artist, album, seek bar, transport, shuffle,
// repeat, like, and which group this phone controls (the group picker).
// Also the mini player shown above the tab bar on the other screens.

import { h, icon, iconButton, art, fmtTime, clear, toast, errText } from './ui.js';
import { S, on, position, isPlaying, groupById } from './store.js';
import { call, act } from './rpc.js';
import { player, toggle } from './actions.js';

const STATE_WORDS = {
  playing: 'Playing', paused: 'Paused', stopped: 'Stopped', idle: 'Nothing queued',
  loading: 'Opening the stream…', buffering: 'Buffering…', error: 'Stopped by an error',
};
const NEXT_REPEAT = { off: 'all', all: 'one', one: 'off' };

export function createNowPlaying(selectGroup) {
  const picker = h('select.picker', { 'data-test': 'group-picker', 'aria-label': 'Group this phone controls',
    onchange: () => selectGroup(picker.value) });
  const where = h('span.where', { 'data-test': 'np-rooms' });
  const artBox = h('div.np-art');
  const title = h('h1.np-title', { 'data-test': 'np-title' });
  const artist = h('p.np-artist', { 'data-test': 'np-artist' });
  const album = h('p.np-album', { 'data-test': 'np-album' });
  const stateEl = h('p.np-state', { 'data-test': 'np-state', 'aria-live': 'polite' });
  const like = iconButton('heart', 'Like', 'like', onLike, 'like');
  const seek = h('input.seek', { type: 'range', min: '0', max: '1', step: 'any', value: '0', 'data-test': 'seek', 'aria-label': 'Position' });
  const tPos = h('span', { 'data-test': 'np-position' }), tDur = h('span', { 'data-test': 'np-duration' });
  const shuffle = iconButton('shuffle', 'Shuffle', 'shuffle', () => player('player.shuffle', { on: !(S.status && S.status.shuffle) }), 'toggle');
  const repeat = iconButton('repeat', 'Repeat: off', 'repeat', () => player('player.repeat', { mode: NEXT_REPEAT[(S.status && S.status.repeat) || 'off'] || 'off' }), 'toggle');
  const prev = iconButton('prev', 'Previous', 'prev', () => player('player.previous'));
  const next = iconButton('next', 'Next', 'next', () => player('player.next'));
  const play = iconButton('play', 'Play', 'play-pause', toggle, 'big');

  const el = h('section.view.now', { id: 'view-now', 'aria-label': 'Now playing' },
    h('div.np-top', null, h('label.where-l', null, h('span', { text: 'Playing in' }), picker), where),
    artBox,
    h('div.np-meta', null, h('div.np-text', null, title, artist, album), like),
    stateEl,
    h('div.np-seek', null, seek, h('div.times', null, tPos, tDur)),
    h('div.np-ctl', null, shuffle, prev, play, next, repeat));

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
    title.textContent = s.title || (idle ? 'Nothing playing' : (s.file || '').split('/').pop() || 'Untitled');
    artist.textContent = s.station ? s.station : (s.artist || '');
    album.textContent = s.station ? 'Radio stream' : (s.album || '');
    let words = STATE_WORDS[s.state] || s.state;
    if (s.source) words = s.source + ' · ' + words; // "AirPlay from Anna's iPhone · Playing"
    if (s.error) words = s.state === 'error' ? 'Stopped: ' + s.error : words + ' · last error: ' + s.error;
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
    swapIcon(play, p ? 'pause' : 'play', p ? 'Pause' : 'Play');
    play.dataset.state = s.state;
    shuffle.setAttribute('aria-pressed', String(!!s.shuffle));
    const mode = s.repeat || 'off';
    swapIcon(repeat, mode === 'one' ? 'repeat1' : 'repeat', 'Repeat: ' + mode);
    repeat.setAttribute('aria-pressed', String(mode !== 'off'));
    repeat.dataset.mode = mode;
    prev.disabled = next.disabled = idle;
    seek.disabled = !(s.duration > 0);
    seek.max = String(s.duration > 0 ? s.duration : 1);
    tDur.textContent = s.duration > 0 ? fmtTime(s.duration) : (s.station ? 'live' : '');
    if (s.trackId !== shownTrackId) {
      shownTrackId = s.trackId;
      showLiked();
      if (s.trackId !== undefined) { // asked each time: another phone may have liked it
        const id = s.trackId;
        call('library.track', { id }).then((t) => { S.liked.set(id, !!t.liked); showLiked(); }, (e) => toast(errText(e)));
      }
    }
    like.disabled = s.trackId === undefined;
    tick();
  }

  function showLiked() {
    const id = S.status && S.status.trackId;
    const liked = id !== undefined && S.liked.get(id) === true;
    swapIcon(like, liked ? 'heartF' : 'heart', liked ? 'Unlike' : 'Like');
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
      toast(r.liked ? 'Added to favourites' : 'Removed from favourites', 'info');
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
    for (const g of S.groups) picker.appendChild(h('option', { value: g.id, text: g.name + (g.rooms.length ? '' : ' (no rooms)') }));
    if (!groupById(S.group)) picker.appendChild(h('option', { value: S.group, text: S.group }));
    picker.value = S.group;
    const g = groupById(S.group);
    where.textContent = g ? (g.rooms.length ? g.rooms.join(', ') : 'no rooms: nothing is heard') : '';
  }

  on('status', render);
  on('groups', renderGroups);
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
  const t = h('span.t', { 'data-test': 'mini-title' }), s = h('span.s');
  const play = iconButton('play', 'Play', 'mini-play', toggle);
  const bar = h('div.mini-bar');
  const box = h('div.art-slot');
  let cover = null;
  const el = h('div.mini', { id: 'mini' },
    h('button.main', { type: 'button', 'aria-label': 'Show now playing', onclick: () => go('now') }, box, h('span.txt', null, t, s)),
    play, bar);
  function render() {
    const st = S.status || { state: 'idle' };
    el.hidden = st.state === 'idle' && !st.title;
    t.textContent = st.title || 'Nothing playing';
    s.textContent = st.station || [st.artist, STATE_WORDS[st.state]].filter(Boolean).join(' · ');
    const key = (st.coverHash || '') + '|' + (st.album || st.title || '');
    if (cover !== key) { cover = key; clear(box).appendChild(art(st.coverHash, st.album || st.title || '', 'sm')); }
    const p = isPlaying(st);
    swapIcon(play, p ? 'pause' : 'play', p ? 'Pause' : 'Play');
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
