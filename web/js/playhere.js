// Play here: this browser becomes a room (named after the device, and
// editable), in step with the house. The leader sends the group's audio as
// 16-bit PCM chunks stamped with its play time (PTS) over the app's own
// WebSocket (binary messages; the wire is PlayHere in TuttiCore). The page
// keeps a model of the leader's clock from pings (minimum-delay filtering),
// learns when the AudioContext's samples are heard from getOutputTimestamp()
// (chunks wait for the first; outputLatency where the browser has none), and schedules each chunk as an
// AudioBufferSourceNode at the context time its PTS is heard. Drift between
// the sound card and the leader is steered with the node's playbackRate (a
// resampling rate), never by dropping samples; only an error over 20 ms
// restarts the chain.
//
// Opus or PCM: a page that has WebCodecs' AudioDecoder for Opus (browsers
// give WebCodecs only to secure origins: https, or http://localhost) asks
// for Opus, a twelfth of PCM's bytes; on plain http on the LAN it asks for
// PCM. The leader stamps each Opus packet with the PTS its decoded first
// frame plays at (its encoder's look-ahead taken off), and the decoder is
// configured without an Opus header, so it trims nothing as pre-skip: each
// decoded packet is scheduled exactly as a PCM chunk is.
//
// This module (9 KB gzipped) is not part of the first screen (bench/web):
// app.js fetches it with Rooms, where its switch is, or at start when Play
// here was left on; tracks.js brings it for previews. It sets itself up when
// it first runs. The lock screen's silent element is media.js's.

import { h, toast } from './ui.js';
import { t, language } from './i18n.js';
import { on } from './store.js';
import { onBinary, sendBinary } from './rpc.js';
import { setPlayingHere } from './media.js';

const RATE = 48000;
const KEEP_ON = 'tutti.playHere', KEEP_NAME = 'tutti.playHereName';
const MAX_STEER = 0.005;      // ±0.5 % of resampling (9 cents), at most: a stalled output thread slips by tens of ms
const STEER_SECONDS = 1;      // an error is steered away over about this long
const RESYNC_S = 0.02;        // beyond this the chain restarts at the right place
const LEAD_S = 0.01;          // a node is never started closer than this to now
const WAITING_LIMIT = 150;    // chunks kept while the clock is learnt (3 s)

// ---- The leader's clock: leader ms = page ms + offset (+ skew) ----------
const clock = {
  samples: [], // { at: page ms, offset: ms, rtt: ms }
  add(t0, received, sent, t3) {
    const rtt = (t3 - t0) - (sent - received) / 1e6;
    if (!(rtt >= 0) || rtt > 2000) return;
    const offset = ((received / 1e6 - t0) + (sent / 1e6 - t3)) / 2;
    this.samples.push({ at: (t0 + t3) / 2, offset, rtt });
    if (this.samples.length > 64) this.samples.shift();
    this.fit();
  },
  // The samples with the least delay in the window carry the truth; the
  // others waited in a queue. With 10 s or more of them, a line (skew).
  fit() {
    const best = this.samples.slice().sort((a, b) => a.rtt - b.rtt).slice(0, Math.max(3, this.samples.length >> 2));
    let n = 0, sx = 0, sy = 0;
    for (const s of best) { n++; sx += s.at; sy += s.offset; }
    const mx = sx / n, my = sy / n;
    let sxx = 0, sxy = 0;
    for (const s of best) { sxx += (s.at - mx) * (s.at - mx); sxy += (s.at - mx) * (s.offset - my); }
    const span = Math.max(...best.map((s) => s.at)) - Math.min(...best.map((s) => s.at));
    let skew = span >= 10000 && sxx > 0 ? sxy / sxx : 0;
    if (Math.abs(skew) > 5e-4) skew = 0; // no crystal is 500 ppm off: a bad fit
    this.model = { mx, my, skew, rtt: best[0].rtt };
  },
  ready() { return this.samples.length >= 4 && !!this.model; },
  offsetAt(page) { const m = this.model; return m.my + m.skew * (page - m.mx); },
  // The page time (ms) at which it is leader time `ns`.
  pageTime(ns) {
    const l = ns / 1e6;
    const p = l - this.offsetAt(l - this.model.my);
    return l - this.offsetAt(p);
  },
};

// ---- The player ----------------------------------------------------------
const P = {
  on: false, joined: null, ctx: null, gain: null, pingTimer: 0, pings: 0, started: false,
  nodes: [], nextPts: null, nextCtx: 0, err: 0, rate: 1, outMap: null, maps: [], trimS: 0,
  waiting: [], chunks: 0, late: 0, resyncs: 0, why: [], steps: {}, heardAt: 0, startedAt: 0, volume: 100, muted: false,
  // The format asked for ('opus' or 'pcm'; null while the browser is asked), and, for tests and the curious,
  // what came: audio messages and their bytes by format, since the switch; Opus packets the decoder failed.
  codec: null, received: { pcm: 0, opus: 0 }, audioBytes: 0, firstAudioAt: 0, lastAudioAt: 0, decodeErrors: 0,
};
// A preview (see "Previews" below): the track, its node, and for tests and the curious its figures.
const PV = { id: null, src: null, gain: null, analyser: null, seq: 0, pressedAt: 0, startAt: 0, bytes: 0, fetchMs: 0, decodeMs: 0,
  encodeMs: null, cache: null, duration: 0, at: 0, played: 0, error: null };
// For tests and the curious: what the player is doing.
window.tuttiPlayHere = P;
window.tuttiPreview = PV;
P.clock = clock;

function ping() {
  const b = new DataView(new ArrayBuffer(9));
  b.setUint8(0, 1);
  b.setFloat64(1, performance.now());
  sendBinary(b.buffer);
}

// Pings: 8 quickly (the clock is ready in about 100 ms), then twice a
// second for 20 s, then every 2 s.
function schedulePings() {
  clearTimeout(P.pingTimer);
  if (!P.on) return;
  ping();
  P.pings++;
  P.pingTimer = setTimeout(schedulePings, P.pings < 8 ? 15 : P.pings < 48 ? 500 : 2000);
}

// Start, with the formats this page decodes: bit 0 16-bit PCM, bit 1 Opus.
function sendStart() {
  const name = new TextEncoder().encode(roomName()).slice(0, 64);
  const b = new Uint8Array(2 + name.length);
  b[0] = 4;
  b[1] = P.codec === 'opus' ? 3 : 1;
  b.set(name, 2);
  P.started = sendBinary(b.buffer);
}

// ---- Opus through WebCodecs ------------------------------------------------
const OPUS = { codec: 'opus', sampleRate: RATE, numberOfChannels: 2 };
// Whether this browser decodes Opus (asked once; false where WebCodecs is absent, as on plain http).
const opusSupport = (typeof window.AudioDecoder === 'function' && typeof window.EncodedAudioChunk === 'function'
  ? window.AudioDecoder.isConfigSupported(OPUS).then((r) => !!(r && r.supported), () => false)
  : Promise.resolve(false)).then((yes) => { P.codec = yes ? 'opus' : 'pcm'; return yes; });

// What came with each packet in the decoder, in order (a cut that comes meanwhile marks them):
// an Opus decoder gives one output per packet, in order, and its timestamps are its own count of
// frames from the first packet's, so outputs are matched by order, not by timestamp.
const OP = { dec: null, pending: [] };
P.opus = OP; // for tests and the curious

function decoder() {
  if (OP.dec && OP.dec.state === 'configured') return OP.dec;
  const dec = new AudioDecoder({
    output: (a) => decoded(dec, a),
    error: () => { if (OP.dec === dec) { OP.dec = null; OP.pending = []; opusFailed(); } },
  });
  dec.configure(OPUS);
  OP.dec = dec;
  return dec;
}

function decodeOpus(c) {
  try {
    const dec = decoder();
    dec.decode(new EncodedAudioChunk({ type: 'key', timestamp: Math.round(c.pts / 1000), data: c.opus }));
    OP.pending.push(c);
  } catch (e) { resetDecoder(); opusFailed(); }
}

// A decoder that said yes and then fails (a closed codec, a refused configuration): after
// three failures this page asks for PCM instead, as a new start (the leader makes its room again).
function opusFailed() {
  P.decodeErrors++;
  if (P.decodeErrors < 3 || P.codec !== 'opus') return;
  P.codec = 'pcm';
  if (P.on && P.started) sendStart();
}

function decoded(dec, a) {
  const c = dec === OP.dec ? OP.pending.shift() : null;
  if (!c || c.pts >= c.cutFrom) { a.close(); return; }
  c.audio = a;
  c.frames = Math.min(c.frames, a.numberOfFrames);
  schedule(c);
  a.close();
}

// Everything in the decoder is forgotten (a new room: the leader's encoder starts again too).
function resetDecoder() {
  if (OP.dec) { try { OP.dec.close(); } catch (e) { /* closed already */ } }
  OP.dec = null;
  OP.pending = [];
}

function receive(buf) {
  const v = new DataView(buf);
  if (buf.byteLength < 1) return;
  switch (v.getUint8(0)) {
    case 0x81: { // clock reply
      if (buf.byteLength < 25) return;
      clock.add(v.getFloat64(1), Number(v.getBigInt64(9)), Number(v.getBigInt64(17)), performance.now());
      if (P.on && !P.started && clock.ready() && P.codec) { if (!P.steps.clock) P.steps.clock = performance.now() - P.startedAt; sendStart(); }
      if (P.waiting.length && clock.ready() && outputReady()) { const w = P.waiting; P.waiting = []; for (const c of w) play(c); }
      break;
    }
    case 0x82:
      P.joined = new TextDecoder().decode(new Uint8Array(buf, 1));
      P.started = true;
      if (!P.steps.joined) P.steps.joined = performance.now() - P.startedAt;
      render();
      break;
    case 0x83: { // audio
      if (!P.on || buf.byteLength < 18) return;
      const frames = v.getUint32(13), format = v.getUint8(17);
      const c = { stream: v.getUint32(1), pts: Number(v.getBigInt64(5)), frames, cutFrom: Infinity };
      if (format === 1 && buf.byteLength === 18 + frames * 4) { c.pcm = new Int16Array(buf, 18, frames * 2); P.received.pcm++; }
      else if (format === 2 && buf.byteLength > 18 && frames <= 5760 && window.AudioDecoder) { c.opus = new Uint8Array(buf, 18); P.received.opus++; }
      else return;
      P.audioBytes += buf.byteLength;
      P.lastAudioAt = performance.now();
      if (!P.firstAudioAt) P.firstAudioAt = P.lastAudioAt;
      // Until the clock is learnt and the output says when it is heard, chunks wait (the leader sends a second ahead).
      if (!P.steps.audio) P.steps.audio = performance.now() - P.startedAt;
      if (!clock.ready() || !outputReady()) { if (P.waiting.length < WAITING_LIMIT) P.waiting.push(c); return; }
      if (P.waiting.length) { const w = P.waiting; P.waiting = []; for (const x of w) play(x); }
      play(c);
      break;
    }
    case 0x84: cut(Number(v.getBigInt64(1))); break;
    case 0x85: P.volume = v.getUint8(1); P.muted = v.getUint8(2) === 1; P.trimS = Number(v.getBigInt64(3)) / 1e9; applyGain(); break;
    case 0x86: { // stopped
      const why = new TextDecoder().decode(new Uint8Array(buf, 1));
      P.joined = null;
      P.started = false;
      cut(-Infinity);
      if (P.on && why === 'log in to play here') { setOn(false); toast(t('playhere.logIn')); }
      else if (P.on) setTimeout(() => { if (P.on && !P.started) begin(); }, 2000); // the leader let the room go: join again
      render();
      break;
    }
    default: break;
  }
}

// Whether the output says when its samples are heard (a context that runs, and
// an output timestamp where the browser has them): before, the first figures
// are guesses tens of ms apart, and the chain would restart on each.
function outputReady() {
  const ctx = P.ctx;
  if (!ctx || ctx.state !== 'running') return false;
  const ts = ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
  const ready = ts ? ts.performanceTime > 0 && ts.contextTime > 0 : ctx.currentTime > 0.1;
  if (ready && !P.steps.output) P.steps.output = performance.now() - P.startedAt;
  return ready;
}

// The context time at which the sample at that time is heard, from the output
// timestamp (the median of the last five: one may come from a late callback),
// or outputLatency before there is one. Not smoothed further: when the output
// thread stalls, the context falls behind for real, and the chain must follow.
function contextTimeOfPage(pageMs) {
  const ctx = P.ctx;
  const ts = ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
  let d;
  if (ts && ts.performanceTime > 0) d = ts.contextTime - ts.performanceTime / 1000;
  else d = ctx.currentTime - (ctx.outputLatency || ctx.baseLatency || 0) - performance.now() / 1000;
  P.maps.push(d);
  if (P.maps.length > 5) P.maps.shift();
  P.outMap = P.maps.slice().sort((a, b) => a - b)[P.maps.length >> 1];
  return pageMs / 1000 + P.outMap;
}

// A chunk as it came: PCM is scheduled at once, Opus once decoded (in order).
function play(c) {
  if (c.opus) decodeOpus(c); else schedule(c);
}

function schedule(c) {
  const ctx = P.ctx;
  if (!ctx) return;
  P.chunks++;
  const ideal = contextTimeOfPage(clock.pageTime(c.pts)) - P.trimS;
  const dur = c.frames / RATE;
  let start, offset = 0;
  const continues = P.nextPts !== null && Math.abs(c.pts - P.nextPts) < 1e6 && Math.abs(P.nextCtx - ideal) < RESYNC_S;
  if (continues) {
    // Late (positive error): play a little faster until it is gone.
    P.err += 0.1 * ((P.nextCtx - ideal) - P.err);
    P.rate = 1 + Math.max(-MAX_STEER, Math.min(MAX_STEER, P.err / STEER_SECONDS));
    start = P.nextCtx;
  } else {
    if (P.nextPts !== null) {
      P.resyncs++;
      if (P.why.length < 20) P.why.push([(c.pts - P.nextPts) / 1e6, (P.nextCtx - ideal) * 1000]); // why, in ms: for the curious
    }
    P.err = 0;
    P.rate = 1;
    start = ideal;
  }
  const now = ctx.currentTime + LEAD_S;
  if (start < now) { // too late for its start: the part still ahead plays
    offset = (now - start) * P.rate;
    if (offset >= dur) { P.late++; P.nextPts = null; return; }
    start = now;
  }
  const buffer = ctx.createBuffer(2, c.frames, RATE);
  const l = buffer.getChannelData(0), r = buffer.getChannelData(1);
  if (c.audio) {
    c.audio.copyTo(l, { planeIndex: 0, format: 'f32-planar', frameCount: c.frames });
    c.audio.copyTo(r, { planeIndex: 1, format: 'f32-planar', frameCount: c.frames });
  } else {
    const pcm = c.pcm;
    for (let i = 0, j = 0; i < c.frames; i++, j += 2) { l[i] = pcm[j] / 32768; r[i] = pcm[j + 1] / 32768; }
  }
  const src = ctx.createBufferSource();
  src.buffer = buffer;
  src.playbackRate.value = P.rate;
  src.connect(P.gain);
  src.start(start, offset);
  const node = { src, pts: c.pts, end: c.pts + c.frames * 1e9 / RATE, at: start - offset / P.rate, rate: P.rate };
  P.nodes.push(node);
  src.onended = () => { const i = P.nodes.indexOf(node); if (i >= 0) P.nodes.splice(i, 1); };
  P.nextPts = node.end;
  P.nextCtx = start + (dur - offset) / P.rate;
  if (!P.heardAt) { P.heardAt = performance.now() + (start - ctx.currentTime) * 1000; }
  if (c.cutFrom < node.end) src.stop(node.at + (c.cutFrom - node.pts) / 1e9 / node.rate); // cut while it was decoded
}

// Nothing from leader time `from` on plays (a pause, a skip, another group).
function cut(from) {
  for (const n of P.nodes.slice()) {
    if (n.end <= from) continue;
    try {
      if (n.pts >= from) { n.src.onended = null; n.src.stop(); n.src.disconnect(); P.nodes.splice(P.nodes.indexOf(n), 1); }
      else n.src.stop(n.at + (from - n.pts) / 1e9 / n.rate);
    } catch (e) { /* already ended */ }
  }
  for (const c of OP.pending) c.cutFrom = Math.min(c.cutFrom, from); // in the decoder: cut as it comes out
  P.nextPts = null;
  P.waiting = [];
}

// The page's one AudioContext (Play here's and the previews'), made at the first touch that needs it.
function ensureContext() {
  if (!P.ctx) {
    const AC = window.AudioContext || window.webkitAudioContext;
    try { P.ctx = new AC({ sampleRate: RATE, latencyHint: 'interactive' }); } catch (e) { P.ctx = new AC(); }
    P.gain = P.ctx.createGain();
    P.gain.connect(P.ctx.destination);
    applyGain();
  }
  return P.ctx;
}

function applyGain() {
  if (!P.gain) return;
  // As a speaker does: 100 is 0 dB, each step −0.5 dB; 0 and mute are silence.
  // While a preview plays, the room's music here is 20 dB down (on this phone only).
  const duck = PV.src ? 0.1 : 1;
  const g = P.muted || P.volume === 0 ? 0 : duck * Math.pow(10, ((P.volume - 100) * 0.5) / 20);
  P.gain.gain.setTargetAtTime(g, P.ctx.currentTime, 0.02);
}

// ---- The device's name ---------------------------------------------------
// The first that matches the browser names the device.
const DEVICES = [
  [(ua) => /iPhone/.test(ua), () => t('playhere.device.iphone')],
  [(ua) => /iPad/.test(ua) || (/Macintosh/.test(ua) && navigator.maxTouchPoints > 1), () => t('playhere.device.ipad')],
  [(ua) => /Android/.test(ua) && /Mobile/.test(ua), () => t('playhere.device.androidPhone')],
  [(ua) => /Android/.test(ua), () => t('playhere.device.androidTablet')],
  [(ua) => /CrOS/.test(ua), () => t('playhere.device.chromebook')],
  [(ua) => /Macintosh/.test(ua), () => t('playhere.device.mac')],
  [(ua) => /Windows/.test(ua), () => t('playhere.device.windows')],
  [(ua) => /Linux/.test(ua), () => t('playhere.device.linux')],
  [() => true, () => t('playhere.device.browser')],
];

function deviceName() {
  const ua = navigator.userAgent || '';
  return DEVICES.find(([matches]) => matches(ua))[1]();
}

function roomName() {
  let n = null;
  try { n = localStorage.getItem(KEEP_NAME); } catch (e) { /* not kept */ }
  return (n && n.trim()) || deviceName();
}

// ---- On and off ------------------------------------------------------------
function setOn(on) {
  P.on = on;
  try { localStorage.setItem(KEEP_ON, on ? '1' : '0'); } catch (e) { /* not kept */ }
  if (on) {
    ensureContext();
    P.ctx.resume();
    P.startedAt = performance.now();
    P.heardAt = 0;
    P.steps = {};
    P.received = { pcm: 0, opus: 0 };
    P.audioBytes = 0;
    P.firstAudioAt = 0;
    begin();
  } else {
    clearTimeout(P.pingTimer);
    if (P.started) sendBinary(new Uint8Array([3]).buffer);
    P.started = false;
    P.joined = null;
    cut(-Infinity);
    if (P.ctx && !PV.src && PV.id === null) P.ctx.suspend(); // a preview still plays through it
  }
  setPlayingHere(on);
  render();
}

// A (re)connection: the clock is learnt again and the room joins again.
function begin() {
  if (!P.on) return;
  P.started = false;
  P.pings = 0;
  P.outMap = null;
  P.maps = [];
  clock.samples = [];
  clock.model = null;
  cut(-Infinity);
  resetDecoder();
  schedulePings();
}

// ---- Previews ----------------------------------------------------------------
// 30 s from the middle of a library track (GET preview/ID: Ogg Opus the leader
// cuts and encodes, docs/api.md), played on this phone only, through this
// page's one AudioContext: no room, queue, history or player changes. One at
// a time: another preview, the same button again, or another screen stops it.
// Its buttons (tracks.js) carry data-preview=ID and aria-pressed while it plays.

function markPreview(id, on) {
  if (id === null) return;
  for (const b of document.querySelectorAll('button[data-preview="' + id + '"]')) b.setAttribute('aria-pressed', String(on));
}

// The track whose preview plays or loads now (null: none).
export function previewing() { return PV.id; }

export function togglePreview(id) {
  const again = PV.id === id;
  stopPreview();
  if (again) return;
  const ctx = ensureContext();
  ctx.resume(); // in the press: autoplay rules let a touched page start audio
  const mine = ++PV.seq;
  Object.assign(PV, { id, pressedAt: performance.now(), startAt: 0, bytes: 0, fetchMs: 0, decodeMs: 0, encodeMs: null, cache: null, error: null, played: 0 });
  markPreview(id, true);
  const headers = {};
  try { const token = localStorage.getItem('tutti.token'); if (token) headers.Authorization = 'Bearer ' + token; } catch (e) { /* none kept */ }
  fetch('preview/' + encodeURIComponent(id) + '?lang=' + encodeURIComponent(language()), { headers })
    .then((r) => {
      if (r.ok) { PV.encodeMs = +r.headers.get('Tutti-Preview-Encode-Ms'); PV.cache = r.headers.get('Tutti-Preview-Cache'); return r.arrayBuffer(); }
      return r.json().then((j) => { throw new Error((j && j.error && j.error.message) || t('preview.failed')); },
        (e) => { throw new Error(t('preview.failed')); });
    })
    .then((buf) => {
      if (mine !== PV.seq) return null;
      PV.bytes = buf.byteLength;
      PV.fetchMs = performance.now() - PV.pressedAt;
      return ctx.decodeAudioData(buf);
    })
    .then((audio) => {
      if (!audio || mine !== PV.seq) return;
      PV.decodeMs = performance.now() - PV.pressedAt - PV.fetchMs;
      const src = ctx.createBufferSource();
      src.buffer = audio;
      const gain = ctx.createGain();
      const analyser = ctx.createAnalyser();
      analyser.fftSize = 8192;
      src.connect(gain);
      gain.connect(ctx.destination);
      gain.connect(analyser); // what plays, for tests (Tests/Web/preview_test.py)
      src.onended = () => { if (PV.src === src) stopPreview(); };
      const at = ctx.currentTime + LEAD_S;
      src.start(at);
      PV.at = at;
      PV.src = src; PV.gain = gain; PV.analyser = analyser; PV.duration = audio.duration;
      // When it is heard, in page time: the context's output latency after its start.
      PV.startAt = performance.now() + (LEAD_S + (ctx.outputLatency || ctx.baseLatency || 0)) * 1000;
      applyGain();
    })
    .catch((e) => {
      if (mine !== PV.seq) return;
      PV.error = e.message || String(e);
      stopPreview();
      toast(PV.error);
    });
}

export function stopPreview() {
  PV.seq++;
  if (PV.src) {
    PV.played = Math.max(0, P.ctx.currentTime - PV.at); // seconds heard, for the curious
    try { PV.src.onended = null; PV.src.stop(); } catch (e) { /* already ended */ }
    PV.src.disconnect();
    PV.gain.disconnect();
    PV.analyser.disconnect();
  }
  const id = PV.id;
  PV.src = null; PV.gain = null; PV.id = null;
  markPreview(id, false);
  applyGain();
  if (!P.on && P.ctx && P.ctx.state === 'running') P.ctx.suspend(); // nothing else plays here
}

// ---- The switch ------------------------------------------------------------
let sw = null, nameInput = null, state = null;

function render() {
  if (!sw) return;
  sw.setAttribute('aria-checked', String(P.on));
  state.textContent = !P.on ? t('playhere.off') : P.joined ? t('playhere.playingAs', { name: P.joined }) : t('playhere.joining');
}

export function createPlayHere() {
  sw = h('button.switch', { type: 'button', role: 'switch', 'aria-checked': 'false', 'data-test': 'play-here',
    'aria-describedby': 'play-here-state', onclick: () => setOn(!P.on) }, h('span.knob', { 'aria-hidden': 'true' }), h('span', { text: t('playhere.switch') }));
  nameInput = h('input.text', { type: 'text', 'data-test': 'play-here-name', maxlength: '40', value: roomName(), autocomplete: 'off',
    'aria-label': t('playhere.name'),
    onchange: () => {
      const v = nameInput.value.trim();
      try { localStorage.setItem(KEEP_NAME, v); } catch (e) { /* not kept */ }
      if (!v) nameInput.value = roomName();
      if (P.on) { sendStart(); }
    } });
  state = h('span.phstate', { id: 'play-here-state', 'data-test': 'play-here-state', 'aria-live': 'polite' });
  render();
  return h('div.playhere', { role: 'group', 'aria-label': t('playhere.region') }, sw,
    h('label.glabel', null, h('span', { text: t('playhere.name') }), nameInput), state);
}

// Once, when the module first runs.
(function setupPlayHere() {
  onBinary(receive);
  // A new connection: the leader does not know this page; a wake on the same one changes nothing.
  on('connected', (c) => { if (!c) { P.started = false; P.joined = null; cut(-Infinity); render(); } });
  on('open', () => { if (P.on && !P.started) begin(); });
  // A preview belongs to the screen it was started on (app.js emits 'route').
  on('route', stopPreview);
  let keep = null;
  try { keep = localStorage.getItem(KEEP_ON); } catch (e) { /* not kept */ }
  // Back on after a reload: the context may wait for a touch (autoplay rules) and then plays.
  if (keep === '1') {
    setOn(true);
    if (P.ctx && P.ctx.state !== 'running') document.addEventListener('pointerdown', () => P.ctx.resume(), { once: true });
  }
})();
