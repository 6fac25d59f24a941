// Media Session: the phone's lock screen and notification controls show
// what plays and drive the leader while the page is open.

import { S, on, position, isPlaying } from './store.js';
import { player } from './actions.js';

export function setupMediaSession() {
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
