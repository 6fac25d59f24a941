// Sound: one room's equaliser. Pick a room, a preset (built-in or saved),
// or drag ten band sliders (32 Hz … 16 kHz, ±12 dB); the preamp is auto
// (headroom for the largest boost) or manual. Saving names the current
// gains as a preset usable in every room. Sliders under a finger are never
// redrawn by the rooms.changed that follows their own change.

import { h, clear, toast, errText, ask, throttle } from './ui.js';
import { S, on } from './store.js';
import { call } from './rpc.js';

const BANDS = ['32', '64', '125', '250', '500', '1k', '2k', '4k', '8k', '16k'];
const db = (v) => (v > 0 ? '+' : '') + (+v).toFixed(1).replace(/\.0$/, '');

export function createSound() {
  const roomSel = h('select.picker', { 'data-test': 'sound-room', 'aria-label': 'Room', onchange: () => { room = roomSel.value; render(); } });
  const presetSel = h('select.picker', { 'data-test': 'sound-preset', 'aria-label': 'Preset', onchange: () => setEq({ preset: presetSel.value }) });
  const auto = h('input', { type: 'checkbox', 'data-test': 'sound-preamp-auto', onchange: () => setEq({ preamp: auto.checked ? 'auto' : +preamp.value }) });
  const preamp = h('input.vol', { type: 'range', min: '-12', max: '12', step: '0.5', 'data-test': 'sound-preamp', 'aria-label': 'Preamp in dB' });
  const preampText = h('span.num', { 'data-test': 'sound-preamp-value' });
  const bandsBox = h('div.bands');
  const el = h('section.view', { id: 'view-sound', 'aria-label': 'Sound' },
    h('header.bar', null, h('h1', { text: 'Sound' }),
      h('div.acts', null, h('button.btn', { type: 'button', 'data-test': 'sound-save', onclick: save }, 'Save preset'))),
    h('div.orow', null, h('label.glabel', null, h('span', { text: 'Room' }), roomSel),
      h('label.glabel', null, h('span', { text: 'Preset' }), presetSel)),
    bandsBox,
    h('div.vrow', null, h('label.glabel', null, auto, h('span', { text: 'Auto preamp' })), preamp, preampText));

  let room = null, presets = [], dragging = false;
  const sliders = BANDS.map((label, i) => {
    const s = h('input.band', { type: 'range', min: '-12', max: '12', step: '0.5', orient: 'vertical', 'data-test': 'sound-band', 'data-band': String(i), 'aria-label': label + ' Hz in dB' });
    const v = h('span.num', { 'data-test': 'sound-band-value' });
    s.addEventListener('input', () => { dragging = true; v.textContent = db(s.value); sendGains(); });
    s.addEventListener('change', () => { sendGains(); setTimeout(() => { dragging = false; }, 400); });
    bandsBox.appendChild(h('label.bandc', null, v, s, h('span.lbl', { text: label })));
    return { s, v };
  });
  const sendGains = throttle(() => setEq({ gains: sliders.map((b) => +b.s.value) }), 120);
  const sendPreamp = throttle(() => setEq({ preamp: +preamp.value }), 120);
  preamp.addEventListener('input', () => { dragging = true; auto.checked = false; preampText.textContent = db(preamp.value); sendPreamp(); });
  preamp.addEventListener('change', () => { sendPreamp(); setTimeout(() => { dragging = false; }, 400); });

  function setEq(params) {
    if (!room) return;
    call('rooms.setEq', Object.assign({ room }, params)).then(null, (e) => toast(errText(e)));
  }

  function save() {
    if (!room) return;
    ask('Save these bands as a preset', '', 'Save').then((name) => {
      if (!name) return;
      return call('eq.save', { name, room }).then((p) => { toast('Saved the preset “' + p.name + '”', 'info'); loadPresets(); }, (e) => toast(errText(e)));
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
    if (!eq.preset) presetSel.appendChild(h('option', { value: '', text: 'Custom', selected: true, disabled: true }));
    for (const p of presets) presetSel.appendChild(h('option', { value: p.name, text: p.name + (p.builtIn ? '' : ' ★'), selected: p.name === eq.preset }));
    el.dataset.preset = eq.preset || '';
    if (dragging) return;
    sliders.forEach((b, i) => { b.s.value = String(eq.gains[i]); b.v.textContent = db(eq.gains[i]); });
    auto.checked = eq.preamp === 'auto';
    preamp.value = String(eq.preampDb);
    preampText.textContent = db(eq.preampDb);
  }

  on('rooms', render);
  el.refresh = () => loadPresets();
  el.shown = () => loadPresets();
  return el;
}
