// Media Session: the phone's lock screen and notification controls show
// what plays and drive the leader while the page is open.
//
// A silent, looping <audio> element plays while the group plays (the page is
// a room or only a remote), because Chrome on Android and Safari on iOS show
// lock-screen controls only for a page whose media element plays, and Web
// Audio alone does not count; it also keeps the audio session alive when the
// screen locks. It is here, not in playhere.js, so that a remote that never
// plays here has it without fetching Play here.

import { S, on, position, isPlaying } from './store.js';
import { player } from './actions.js';
import { h } from './ui.js';

// ---- The silent element -----------------------------------------------------
const silence = {
  el: null,
  unlocked: false,
  here: false, // this page plays here (playhere.js)
  // 6 s of 8 kHz 8-bit mono silence, made here (no download): Chrome shows
  // controls only for media of 5 s or more.
  make() {
    const n = 8000 * 6, b = new DataView(new ArrayBuffer(44 + n));
    const s = (o, x) => { for (let i = 0; i < x.length; i++) b.setUint8(o + i, x.charCodeAt(i)); };
    s(0, 'RIFF'); b.setUint32(4, 36 + n, true); s(8, 'WAVEfmt '); b.setUint32(16, 16, true); b.setUint16(20, 1, true);
    b.setUint16(22, 1, true); b.setUint32(24, 8000, true); b.setUint32(28, 8000, true); b.setUint16(32, 1, true);
    b.setUint16(34, 8, true); s(36, 'data'); b.setUint32(40, n, true);
    for (let i = 0; i < n; i++) b.setUint8(44 + i, 128);
    const el = h('audio', { loop: true, preload: 'auto', hidden: true, 'data-test': 'media-keepalive', 'aria-hidden': 'true' });
    el.src = URL.createObjectURL(new Blob([b.buffer], { type: 'audio/wav' }));
    el.volume = 0.0001; // some browsers ignore muted elements for the lock screen
    document.body.appendChild(el);
    return el;
  },
  // Plays while the group plays or this page plays here, once the person has touched the page.
  update() {
    if (!this.unlocked) return;
    const want = this.here || isPlaying(S.status);
    if (!this.el && !want) return;
    if (!this.el) this.el = this.make();
    if (want && this.el.paused) this.el.play().catch(() => { /* not allowed yet */ });
    else if (!want && !this.el.paused) this.el.pause();
  },
};

// Play here switched on or off (playhere.js).
export function setPlayingHere(on) { silence.here = on; silence.update(); }

export function setupMediaSession() {
  on('status', () => silence.update());
  // Audio may start only after a touch or a key: the first one unlocks the silent element.
  const unlock = () => { silence.unlocked = true; silence.update(); };
  document.addEventListener('pointerdown', unlock, { once: true, capture: true });
  document.addEventListener('keydown', unlock, { once: true, capture: true });
  const ms = navigator.mediaSession;
  if (!ms) return;
  const handle = (action, fn) => { try { ms.setActionHandler(action, fn); } catch (e) { /* action not supported here */ } };
  handle('play', () => player('player.play'));
  handle('pause', () => player('player.pause'));
  handle('stop', () => player('player.stop'));
  handle('nexttrack', () => player('player.next'));
  handle('previoustrack', () => player('player.previous'));
  handle('seekto', (d) => { if (d && d.seekTime >= 0) player('player.seek', { position: d.seekTime }); });
  handle('seekbackward', (d) => player('player.seek', { by: -((d && d.seekOffset) || 10) }));
  handle('seekforward', (d) => player('player.seek', { by: (d && d.seekOffset) || 10 }));

  let key = '';
  on('status', () => {
    const s = S.status || {};
    const k = [s.title, s.artist, s.album, s.station, s.coverHash].join('\u0000');
    if (k !== key && typeof MediaMetadata !== 'undefined') {
      key = k;
      const artwork = s.coverHash ? [{ src: new URL('art/' + encodeURIComponent(s.coverHash), location.href).href }] :
        [{ src: new URL('icons/icon-512.png', location.href).href, sizes: '512x512', type: 'image/png' }];
      try {
        ms.metadata = s.state === 'idle' ? null : new MediaMetadata({ title: s.title || '', artist: s.artist || s.station || '', album: s.album || '', artwork });
      } catch (e) { /* old browser */ }
    }
    ms.playbackState = isPlaying(s) ? 'playing' : (s.state === 'paused' ? 'paused' : 'none');
    if (ms.setPositionState && s.duration > 0) {
      try { ms.setPositionState({ duration: s.duration, position: Math.min(position(), s.duration), playbackRate: 1 }); } catch (e) { /* bad figures */ }
    }
  });
}
