// Sound: one room's equaliser. Pick a room, a preset (built-in or saved),
// or drag ten band sliders (32 Hz … 16 kHz, ±12 dB); the preamp is auto
// (headroom for the largest boost) or manual. Saving names the current
// gains as a preset usable in every room. Sliders under a finger are never
// redrawn by the rooms.changed that follows their own change.
// Below it, the room's reverb: a preset (or Off) and the wet/dry mix, 0–100 %.
// Below the rooms' EQ: the controlled group's speed (pitch kept) and pitch
// (speed kept), set at the leader so every room of the group stays in step.
// Last, this phone's own settings: the page's language.

import { h, clear, toast, errText, ask, throttle } from './ui.js';
import { S, on } from './store.js';
import { call } from './rpc.js';
import { player } from './actions.js';
import { t, LANGUAGES, language, setLanguage } from './i18n.js';

const OFF = 'off';
const BANDS = ['32', '64', '125', '250', '500', '1k', '2k', '4k', '8k', '16k'];
const db = (v) => (v > 0 ? '+' : '') + (+v).toFixed(1).replace(/\.0$/, '');

export function createSound(go) {
  const roomSel = h('select.picker', { 'data-test': 'sound-room', 'aria-label': t('sound.room'), onchange: () => { room = roomSel.value; render(); } });
  const presetSel = h('select.picker', { 'data-test': 'sound-preset', 'aria-label': t('sound.preset'), onchange: () => setEq({ preset: presetSel.value }) });
  const auto = h('input', { type: 'checkbox', 'data-test': 'sound-preamp-auto', onchange: () => setEq({ preamp: auto.checked ? 'auto' : +preamp.value }) });
  const preamp = h('input.vol', { type: 'range', min: '-12', max: '12', step: '0.5', 'data-test': 'sound-preamp', 'aria-label': t('sound.preampDb') });
  const preampText = h('span.num', { 'data-test': 'sound-preamp-value' });
  const bandsBox = h('div.bands');
  const reverbSel = h('select.picker', { 'data-test': 'sound-reverb', 'aria-label': t('sound.reverbPreset'), onchange: () => { reverbChosenAt = Date.now(); setReverb({ preset: reverbSel.value }); setTimeout(render, 1100); } });
  // A select keeps focus after a choice, so focus cannot say "leave it alone": only the second
  // after the person's own choice is (an older update may still arrive), then other devices' changes show.
  let reverbChosenAt = 0;
  // The leader's preset names (rooms.setReverb), each shown in the page's language.
  const reverbs = [['Small room', t('sound.reverbSmallRoom')], ['Medium room', t('sound.reverbMediumRoom')], ['Large hall', t('sound.reverbLargeHall')],
    ['Plate', t('sound.reverbPlate')], ['Cathedral', t('sound.reverbCathedral')]];
  reverbSel.appendChild(h('option', { value: OFF, text: t('sound.reverbOff') }));
  for (const [name, text] of reverbs) reverbSel.appendChild(h('option', { value: name, text }));
  const reverbMix = h('input.vol', { type: 'range', min: '0', max: '100', step: '1', 'data-test': 'sound-reverb-mix', 'aria-label': t('sound.reverbMixLabel') });
  const reverbMixText = h('span.num', { 'data-test': 'sound-reverb-mix-value' });
  const speed = h('input.vol', { type: 'range', min: '0.5', max: '2', step: '0.05', 'data-test': 'sound-speed', 'aria-label': t('sound.speedLabel') });
  const speedText = h('span.num', { 'data-test': 'sound-speed-value' });
  const pitch = h('input.vol', { type: 'range', min: '-12', max: '12', step: '1', 'data-test': 'sound-pitch', 'aria-label': t('sound.pitchLabel') });
  const pitchText = h('span.num', { 'data-test': 'sound-pitch-value' });
  const resetTempo = h('button.btn', { type: 'button', 'data-test': 'sound-tempo-reset', onclick: () => {
    player('player.setSpeed', { speed: 1 }).then(() => player('player.setPitch', { semitones: 0 })).then(null, (e) => toast(errText(e)));
  } }, t('sound.normal'));
  const langSel = h('select.picker', { 'data-test': 'settings-language', onchange: () => setLanguage(langSel.value) },
    LANGUAGES.map(([code, name]) => h('option', { value: code, lang: code, text: name, selected: code === language() })));
  const el = h('section.view', { id: 'view-sound', 'aria-label': t('sound.title') },
    h('header.bar', null, h('h1', { text: t('sound.title') }),
      h('div.acts', null, h('button.btn', { type: 'button', 'data-test': 'sound-tune', onclick: () => go('tune') }, t('sound.tune')),
        h('button.btn', { type: 'button', 'data-test': 'sound-save', onclick: save }, t('sound.savePreset')))),
    h('div.orow', null, h('label.glabel', null, h('span', { text: t('sound.room') }), roomSel),
      h('label.glabel', null, h('span', { text: t('sound.preset') }), presetSel)),
    bandsBox,
    h('div.vrow', null, h('label.glabel', null, auto, h('span', { text: t('sound.autoPreamp') })), preamp, preampText),
    h('h2', { text: t('sound.reverbTitle') }),
    h('div.orow', null, h('label.glabel', null, h('span', { text: t('sound.reverbPreset') }), reverbSel)),
    h('div.vrow', null, h('span.glabel', { text: t('sound.reverbMix') }), reverbMix, reverbMixText),
    h('h2', { text: t('sound.tempoTitle') }),
    h('div.vrow', null, h('span.glabel', { text: t('sound.speed') }), speed, speedText),
    h('div.vrow', null, h('span.glabel', { text: t('sound.pitch') }), pitch, pitchText, resetTempo),
    h('h2', { text: t('settings.title') }),
    h('div.orow', null, h('label.glabel', null, h('span', { text: t('settings.language') }), langSel)));

  let room = null, presets = [], dragging = false;
  const sliders = BANDS.map((label, i) => {
    const s = h('input.band', { type: 'range', min: '-12', max: '12', step: '0.5', orient: 'vertical', 'data-test': 'sound-band', 'data-band': String(i), 'aria-label': t('sound.band', { band: label }) });
    const v = h('span.num', { 'data-test': 'sound-band-value' });
    s.addEventListener('input', () => { dragging = true; v.textContent = db(s.value); sendGains(); });
    s.addEventListener('change', () => { sendGains(); setTimeout(() => { dragging = false; render(); }, 400); });
    bandsBox.appendChild(h('label.bandc', null, v, s, h('span.lbl', { text: label })));
    return { s, v };
  });
  const sendGains = throttle(() => setEq({ gains: sliders.map((b) => +b.s.value) }), 120);
  const sendPreamp = throttle(() => setEq({ preamp: +preamp.value }), 120);
  preamp.addEventListener('input', () => { dragging = true; auto.checked = false; preampText.textContent = db(preamp.value); sendPreamp(); });
  preamp.addEventListener('change', () => { sendPreamp(); setTimeout(() => { dragging = false; render(); }, 400); });
  // The mix while a finger drags it: sent throttled; the slider is not redrawn under it.
  let mixDragging = false;
  const sendMix = throttle(() => setReverb({ mix: +reverbMix.value }), 120);
  reverbMix.addEventListener('input', () => { mixDragging = true; reverbMixText.textContent = reverbMix.value + ' %'; sendMix(); });
  reverbMix.addEventListener('change', () => { sendMix(); setTimeout(() => { mixDragging = false; render(); }, 400); });

  function setReverb(params) {
    if (!room) return;
    call('rooms.setReverb', Object.assign({ room }, params)).then(null, (e) => { toast(errText(e)); reverbChosenAt = 0; render(); });
  }

  // Each change restarts the group's audio at the point heard: send only where the finger stops.
  let tempoDragging = false;
  const speedLabel = (v) => (+v).toFixed(2) + '×', pitchLabel = (v) => t('sound.semitones', { n: db(v) });
  speed.addEventListener('input', () => { tempoDragging = true; speedText.textContent = speedLabel(speed.value); });
  speed.addEventListener('change', () => {
    player('player.setSpeed', { speed: +speed.value }).then(null, (e) => toast(errText(e))).then(() => { tempoDragging = false; renderTempo(); });
  });
  pitch.addEventListener('input', () => { tempoDragging = true; pitchText.textContent = pitchLabel(pitch.value); });
  pitch.addEventListener('change', () => {
    player('player.setPitch', { semitones: +pitch.value }).then(null, (e) => toast(errText(e))).then(() => { tempoDragging = false; renderTempo(); });
  });

  function renderTempo() {
    const st = S.status || {};
    el.dataset.speed = String(st.speed || 1);
    el.dataset.pitch = String(st.pitch || 0);
    if (tempoDragging) return;
    speed.value = String(st.speed || 1);
    speedText.textContent = speedLabel(st.speed || 1);
    pitch.value = String(st.pitch || 0);
    pitchText.textContent = pitchLabel(st.pitch || 0);
  }
  on('status', renderTempo);

  function setEq(params) {
    if (!room) return;
    call('rooms.setEq', Object.assign({ room }, params)).then(null, (e) => toast(errText(e)));
  }

  function save() {
    if (!room) return;
    ask(t('sound.saveAsk'), '', t('ui.save')).then((name) => {
      if (!name) return;
      return call('eq.save', { name, room }).then((p) => { toast(t('sound.saved', { name: p.name }), 'info'); loadPresets(); }, (e) => toast(errText(e)));
    });
  }

  function loadPresets() {
    return call('eq.presets').then((r) => { presets = r.presets || []; render(); }, (e) => toast(errText(e)));
  }

  function render() {
    const names = S.rooms.map((r) => r.name);
    if (!room || names.indexOf(room) < 0) room = names[0] || null;
    clear(roomSel);
    for (const n of names) roomSel.appendChild(h('option', { value: n, text: n, selected: n === room }));
    const r = S.rooms.find((x) => x.name === room);
    const eq = (r && r.eq) || { gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], preamp: 'auto', preampDb: 0, preset: 'Flat' };
    clear(presetSel);
    if (!eq.preset) presetSel.appendChild(h('option', { value: '', text: t('sound.custom'), selected: true, disabled: true }));
    for (const p of presets) presetSel.appendChild(h('option', { value: p.name, text: p.name + (p.builtIn ? '' : ' ★'), selected: p.name === eq.preset }));
    el.dataset.preset = eq.preset || '';
    const rv = (r && r.reverb) || { off: true, mix: 0, preset: null };
    el.dataset.reverb = rv.off ? OFF : (rv.preset || 'custom');
    el.dataset.reverbMix = String(rv.mix);
    if (Date.now() - reverbChosenAt > 1000) {
      const custom = !rv.off && !rv.preset;
      let c = reverbSel.querySelector('option[value=""]');
      if (custom && !c) reverbSel.appendChild(c = h('option', { value: '', text: t('sound.custom'), disabled: true }));
      if (!custom && c) c.remove();
      reverbSel.value = rv.off ? OFF : (rv.preset || '');
    }
    if (!mixDragging) { reverbMix.value = String(rv.mix); reverbMixText.textContent = rv.mix + ' %'; }
    if (dragging) return;
    sliders.forEach((b, i) => { b.s.value = String(eq.gains[i]); b.v.textContent = db(eq.gains[i]); });
    auto.checked = eq.preamp === 'auto';
    preamp.value = String(eq.preampDb);
    preampText.textContent = db(eq.preampDb);
  }

  on('rooms', render);
  el.refresh = () => loadPresets();
  el.shown = () => { renderTempo(); return loadPresets(); };
  return el;
}
