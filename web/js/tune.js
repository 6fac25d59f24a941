// Tune rooms (#/tune, from Sound): the chosen rooms play a sweep one after
// another (calibrate.play) while this phone records them, and the leader
// analyses the recording (POST /calibrate, TuttiCore's Calibration): each
// room's delay, confidence and response. Apply sets the latency trims that
// make every room arrive together here, and optionally a "Tuned <date>" EQ
// preset per room. Only relative arrival times matter, so the phone's clock
// needs no sync. The microphone needs a secure origin (HTTPS or localhost);
// elsewhere the sweeps are played from here and recorded with any recorder,
// and the file is chosen below (docs/sound.md "Tuning rooms").

import { h, clear, toast, errText } from './ui.js';
import { S, on } from './store.js';
import { call } from './rpc.js';
import { t, language } from './i18n.js';

const BANDS = ['32 Hz', '64 Hz', '125 Hz', '250 Hz', '500 Hz', '1 kHz', '2 kHz', '4 kHz', '8 kHz', '16 kHz'];
// The leader analyses at most 60 s (CalibrationUpload.maximumSeconds).
const MAX_SECONDS = 60;
// After the leader says the sweeps are over: the last room's sound still on its way (a speaker's own delay, the reverb).
const TAIL_MS = 1000;
const FILE_LIMIT = 200 * 1024 * 1024;

const fixed = (v, d) => new Intl.NumberFormat(language(), { minimumFractionDigits: d, maximumFractionDigits: d, signDisplay: 'auto' }).format(v);
const signed = (v, d) => new Intl.NumberFormat(language(), { minimumFractionDigits: d, maximumFractionDigits: d, signDisplay: 'exceptZero' }).format(v);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Whether this page may use the microphone at all (a secure origin with getUserMedia and AudioWorklet).
function canRecord() {
  return !!(window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia && window.AudioWorkletNode);
}

// The microphone, raw: no echo cancellation, noise suppression or automatic
// gain (they would bend the sweeps and move their level), its first channel
// recorded. The audio context is made before the first await, while the tap
// still counts as the person's gesture (Safari keeps a context made later
// suspended); it runs at the device's rate, which is the microphone's on phones.
async function openMicrophone() {
  const ctx = new AudioContext();
  const resumed = ctx.resume().catch(() => {});
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false, channelCount: 1 },
    });
  } catch (e) { ctx.close(); throw e; }
  await ctx.audioWorklet.addModule(new URL('tune-worklet.js', import.meta.url).href);
  const source = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, 'tutti-recorder');
  const limit = MAX_SECONDS * ctx.sampleRate;
  const blocks = [];
  let frames = 0;
  node.port.onmessage = (e) => {
    if (frames >= limit) return;
    blocks.push(e.data);
    frames += e.data.length;
  };
  source.connect(node);
  await Promise.race([resumed, sleep(3000)]);
  if (ctx.state !== 'running') {
    source.disconnect();
    for (const tr of stream.getTracks()) tr.stop();
    ctx.close();
    throw new Error(t('tune.suspended'));
  }
  return {
    seconds: () => frames / ctx.sampleRate,
    full: () => frames >= limit,
    async stop() {
      node.port.postMessage('flush');
      await sleep(100);
      source.disconnect();
      node.port.onmessage = null;
      for (const tr of stream.getTracks()) tr.stop();
      const samples = new Float32Array(Math.min(frames, limit));
      let at = 0;
      for (const b of blocks) {
        const n = Math.min(b.length, samples.length - at);
        samples.set(b.subarray(0, n), at);
        at += n;
      }
      const sampleRate = ctx.sampleRate;
      ctx.close();
      return { samples, sampleRate };
    },
  };
}

// A mono 32-bit float WAV file.
function wavFile(samples, rate) {
  const bytes = new ArrayBuffer(44 + samples.length * 4);
  const v = new DataView(bytes);
  const text = (at, s) => { for (let i = 0; i < s.length; i++) v.setUint8(at + i, s.charCodeAt(i)); };
  text(0, 'RIFF'); v.setUint32(4, 36 + samples.length * 4, true); text(8, 'WAVE');
  text(12, 'fmt '); v.setUint32(16, 16, true); v.setUint16(20, 3, true); v.setUint16(22, 1, true);
  v.setUint32(24, rate, true); v.setUint32(28, rate * 4, true); v.setUint16(32, 4, true); v.setUint16(34, 32, true);
  text(36, 'data'); v.setUint32(40, samples.length * 4, true);
  new Float32Array(bytes, 44).set(samples);
  return bytes;
}

// A recording made elsewhere (any format this browser decodes), as 48 kHz mono.
async function decodeFile(file) {
  if (file.size > FILE_LIMIT) throw new Error(t('tune.tooLong', { max: MAX_SECONDS }));
  const data = await file.arrayBuffer();
  const ctx = new OfflineAudioContext(1, 1, 48000);
  let buffer;
  try { buffer = await ctx.decodeAudioData(data); } catch (e) { throw new Error(t('tune.cannotDecode', { name: file.name })); }
  if (buffer.duration > MAX_SECONDS) throw new Error(t('tune.tooLong', { max: MAX_SECONDS }));
  return { samples: buffer.getChannelData(0), sampleRate: buffer.sampleRate };
}

export function createTune(go) {
  let plan = null, report = null, busy = false;
  const roomsBox = h('div.tune-rooms');
  const status = h('p.tune-status', { 'data-test': 'tune-status', role: 'status', 'aria-live': 'polite' });
  const problem = h('p.tune-error', { 'data-test': 'tune-error', role: 'alert' });
  const results = h('div.cards', { 'data-test': 'tune-results' });
  const start = h('button.btn.primary', { type: 'button', 'data-test': 'tune-start', onclick: () => measure() }, t('tune.start'));
  const playOnly = h('button.btn', { type: 'button', 'data-test': 'tune-play', onclick: () => playSweeps() }, t('tune.playOnly'));
  const file = h('input', { type: 'file', accept: 'audio/*,.wav,.m4a,.mp3,.flac,.ogg', 'data-test': 'tune-file', id: 'tune-file',
    onchange: () => { const f = file.files && file.files[0]; file.value = ''; if (f) fromFile(f); } });
  const withEq = h('input', { type: 'checkbox', 'data-test': 'tune-eq', id: 'tune-eq' });
  const apply = h('button.btn.primary', { type: 'button', 'data-test': 'tune-apply', disabled: true, onclick: () => applyResult() }, t('tune.apply'));
  const applyRow = h('div.tune-apply', { hidden: true },
    h('label.glabel', { for: 'tune-eq' }, withEq, h('span', { text: t('tune.applyEq') })), apply);
  const secureNote = h('p.tune-note', { 'data-test': 'tune-insecure', text: t('tune.insecure') });

  const el = h('section.view', { id: 'view-tune', 'aria-label': t('tune.title') },
    h('header.bar', null, h('h1', { text: t('tune.title') }),
      h('div.acts', null, h('button.btn', { type: 'button', 'data-test': 'tune-back', onclick: () => go('sound', true) }, t('ui.back')))),
    h('p.tune-note', { text: t('tune.intro') }),
    h('fieldset.tune-set', null, h('legend', { text: t('tune.rooms') }), roomsBox),
    h('div.tune-acts', null, start),
    secureNote,
    h('h2', { text: t('tune.elsewhere') }),
    h('p.tune-note', { text: t('tune.elsewhereHelp') }),
    h('div.tune-acts', null, playOnly),
    h('div.tune-acts', null, h('label.glabel', { for: 'tune-file', text: t('tune.file') }), file),
    status, problem, results, applyRow);

  function selected() {
    return Array.from(roomsBox.querySelectorAll('input[type=checkbox]')).filter((c) => c.checked).map((c) => c.value);
  }

  function renderRooms() {
    // Rooms stay as ticked; a room seen for the first time comes ticked.
    const keep = new Set(selected());
    const before = new Set(Array.from(roomsBox.querySelectorAll('input[type=checkbox]')).map((c) => c.value));
    clear(roomsBox);
    const names = S.rooms.filter((r) => r.connected).map((r) => r.name);
    if (!names.length) roomsBox.appendChild(h('p.tune-note', { text: t('tune.noRooms') }));
    for (const name of names) {
      roomsBox.appendChild(h('label.glabel.tune-room', null,
        h('input', { type: 'checkbox', value: name, 'data-test': 'tune-room', 'data-room': name, checked: keep.has(name) || !before.has(name) }),
        h('span', { text: name })));
    }
    setBusy(busy);
  }

  function setBusy(b) {
    busy = b;
    start.disabled = b || !canRecord();
    playOnly.disabled = b;
    file.disabled = b;
    apply.disabled = b || !report || !report.usable;
    el.dataset.busy = b ? '1' : '';
    secureNote.hidden = canRecord();
  }

  function say(text) { status.textContent = text; }
  function refuse(text) {
    problem.textContent = text || '';
    el.dataset.error = text ? '1' : '';
  }

  // The plan of the rooms chosen: the one played last when it is of these rooms, else the default (2 s slots).
  function planFor(rooms) {
    if (plan && plan.rooms && plan.rooms.join('\n') === rooms.join('\n')) return plan;
    return { rooms, slotMs: 2000 };
  }

  // Waits for the leader to put the rooms back (the last sweep played).
  async function playedOut(p) {
    const limit = performance.now() + ((p.slots || p.rooms).length * (p.slotMs || 2000)) + 15000;
    for (;;) {
      const s = await call('calibrate.status');
      if (!s.playing) return;
      if (performance.now() > limit) throw new Error(t('tune.stuck'));
      await sleep(250);
    }
  }

  function chosen() {
    const rooms = selected();
    if (!rooms.length) { refuse(t('tune.pickRooms')); return null; }
    return rooms;
  }

  async function measure() {
    const rooms = chosen();
    if (!rooms || busy) return;
    refuse(''); clearResults(); setBusy(true);
    say(t('tune.opening'));
    let mic;
    try { mic = await openMicrophone(); } catch (e) {
      refuse(t('tune.noMicrophone', { reason: (e && (e.message || e.name)) || '' }));
      say(''); setBusy(false); return;
    }
    try {
      plan = await call('calibrate.play', { rooms });
      say(t('tune.listening', { rooms: rooms.join(', ') }));
      await playedOut(plan);
      await sleep(TAIL_MS);
    } catch (e) {
      await mic.stop();
      refuse(errText(e)); say(''); setBusy(false); return;
    }
    const rec = await mic.stop();
    el.dataset.recordedSeconds = String(rec.samples.length / rec.sampleRate);
    await analyse(rec, planFor(rooms));
  }

  async function playSweeps() {
    const rooms = chosen();
    if (!rooms || busy) return;
    refuse(''); setBusy(true);
    try {
      plan = await call('calibrate.play', { rooms });
      say(t('tune.recordNow', { rooms: rooms.join(', ') }));
      await playedOut(plan);
      say(t('tune.played'));
    } catch (e) { refuse(errText(e)); say(''); }
    setBusy(false);
  }

  async function fromFile(f) {
    const rooms = chosen();
    if (!rooms || busy) return;
    refuse(''); clearResults(); setBusy(true);
    say(t('tune.reading', { name: f.name }));
    let rec;
    try { rec = await decodeFile(f); } catch (e) { refuse(errText(e)); say(''); setBusy(false); return; }
    await analyse(rec, planFor(rooms));
  }

  async function analyse(rec, p) {
    say(t('tune.analysing'));
    const headers = { 'Content-Type': 'audio/wav' };
    try { const token = localStorage.getItem('tutti.token'); if (token) headers.Authorization = 'Bearer ' + token; } catch (e) { /* none kept */ }
    const url = 'calibrate?plan=' + encodeURIComponent(JSON.stringify(p)) + '&lang=' + encodeURIComponent(language());
    try {
      const r = await fetch(url, { method: 'POST', headers, body: wavFile(rec.samples, rec.sampleRate) });
      if (r.status === 413) throw new Error(t('tune.tooLong', { max: MAX_SECONDS }));
      if (r.status === 503) throw new Error(t('tune.busy'));
      const isJSON = (r.headers.get('Content-Type') || '').indexOf('application/json') === 0;
      const body = isJSON ? await r.json() : { error: { message: await r.text() } };
      if (!r.ok) throw new Error((body.error && body.error.message) || t('ui.error'));
      report = body;
      say(report.usable ? t('tune.done') : t('tune.notUsable'));
      render();
    } catch (e) {
      refuse(errText(e)); say('');
    }
    setBusy(false);
  }

  function clearResults() {
    report = null;
    clear(results);
    applyRow.hidden = true;
  }

  // One measurement's facts: a room's, or one side of a stereo pair's.
  function facts(r) {
    return h('dl.tune-facts', null,
      h('dt', { text: t('tune.delay') }), h('dd', { 'data-test': 'tune-delay', text: r.delayMs === undefined ? '—' : t('tune.ms', { value: fixed(r.delayMs, 3) }) }),
      h('dt', { text: t('tune.confidence') }), h('dd', { text: t('tune.db', { value: fixed(r.confidenceDb, 0) }) }),
      h('dt', { text: t('tune.trim') }), h('dd', { 'data-test': 'tune-trim', text: r.trimMs === undefined ? '—' :
        t('tune.trimChange', { from: fixed(r.currentTrimMs || 0, 3), to: fixed(r.trimMs, 3) }) }));
  }

  // What Apply sets: each speaker's trim by its own name (a pair's two sides apart).
  function measurements() {
    const out = [];
    for (const r of report.rooms) {
      if (r.sides) for (const s of r.sides) out.push({ name: s.speaker, m: s });
      else out.push({ name: r.room, m: r });
    }
    return out;
  }

  function render() {
    clear(results);
    if (!report) return;
    for (const r of report.rooms) {
      const card = h('div.room.tune-card', { 'data-test': 'tune-result', 'data-room': r.room, 'data-problem': r.problemCode || '' },
        h('h3', { text: r.room }));
      if (r.sides) {
        card.dataset.pair = '1';
        card.appendChild(h('p.tune-note', { text: t('tune.pairNote') }));
        for (const s of r.sides) {
          card.appendChild(h('div.tune-side', { 'data-test': 'tune-side', 'data-side': s.side, 'data-speaker': s.speaker,
            'data-delay-ms': s.delayMs === undefined ? '' : String(s.delayMs), 'data-trim-ms': s.trimMs === undefined ? '' : String(s.trimMs) },
          h('h4', { text: t('tune.side', { side: t(s.side === 'right' ? 'pair.right' : 'pair.left'), speaker: s.speaker }) }), facts(s),
          s.problem ? h('p.tune-error', { 'data-test': 'tune-problem', text: s.problem }) : null));
        }
      } else {
        card.dataset.delayMs = r.delayMs === undefined ? '' : String(r.delayMs);
        card.dataset.trimMs = r.trimMs === undefined ? '' : String(r.trimMs);
        card.appendChild(facts(r));
        if (r.problem) card.appendChild(h('p.tune-error', { 'data-test': 'tune-problem', text: r.problem }));
      }
      if (r.responseDb) {
        const rows = BANDS.map((band, i) => h('tr', null, h('th', { scope: 'row', text: band }),
          h('td', { text: r.responseDb[i] === null ? '—' : t('tune.db', { value: signed(r.responseDb[i], 1) }) }),
          h('td', { text: t('tune.db', { value: signed(r.eq[i], 1) }) })));
        card.appendChild(h('details.tune-response', null, h('summary', { text: t('tune.response') }),
          h('table', null, h('thead', null, h('tr', null, h('th', { scope: 'col', text: t('tune.band') }),
            h('th', { scope: 'col', text: t('tune.measured') }), h('th', { scope: 'col', text: t('tune.eq') }))), h('tbody', null, rows))));
      }
      results.appendChild(card);
    }
    // The recorder padded a dropout with silence; the leader took it out (said, so a person knows why to keep the phone idle).
    if (report.gapsClosedMs) {
      results.appendChild(h('p.tune-note', { 'data-test': 'tune-gaps', text: t('tune.gapsClosed', { ms: fixed(report.gapsClosedMs, 1) }) }));
    }
    applyRow.hidden = false;
    el.dataset.usable = report.usable ? '1' : '';
  }

  async function applyResult() {
    if (!report || !report.usable || busy) return;
    setBusy(true);
    const day = new Date();
    const iso = day.getFullYear() + '-' + String(day.getMonth() + 1).padStart(2, '0') + '-' + String(day.getDate()).padStart(2, '0');
    try {
      for (const { name, m } of measurements()) {
        if (m.trimMs !== undefined && m.trimMs !== m.currentTrimMs) await call('rooms.set', { room: name, latencyMs: m.trimMs });
      }
      if (withEq.checked) {
        // A pair has one EQ: set by its name.
        for (const r of report.rooms) {
          if (!r.eq) continue;
          const name = 'Tuned ' + iso + ' ' + r.room.slice(0, 40);
          await call('eq.save', { name, gains: r.eq });
          await call('rooms.setEq', { room: r.room, preset: name });
        }
      }
      for (const { m } of measurements()) if (m.trimMs !== undefined) m.currentTrimMs = m.trimMs;
      el.dataset.applied = '1';
      render();
      toast(withEq.checked ? t('tune.appliedEq') : t('tune.applied'), 'info');
    } catch (e) { toast(errText(e)); }
    setBusy(false);
  }

  on('rooms', renderRooms);
  el.shown = () => { renderRooms(); };
  renderRooms();
  return el;
}
