// Rooms and groups: every room by group, with volume, mute, latency trim,
// channels (a channel map, or a stereo pair's two speakers with their sides,
// Swap and Unpair) and sync health (offline rooms greyed); "Stereo pair" makes
// two rooms one; each group's volume (the loudest
// room's, scaled keeping ratios), rename/delete, which group a room is in
// (a picker), new groups, and the Party button.
// Cards are updated in place so a slider under a finger is never redrawn.

import { h, icon, iconButton, clear, toast, errText, ask, confirmBox, formBox, throttle } from './ui.js';
import { t, count } from './i18n.js';
import { S, on, groupById } from './store.js';
import { call, act, isUnknownMethod } from './rpc.js';

const NEW = '\u0000new', OWN = '\u0000own';
const CHANNELS = ['stereo', 'left', 'right', 'mono', 'swap'];

function health(room) {
  if (!room || !room.connected) return { text: t('health.offline'), bad: true };
  const hl = room.health;
  if (!hl) return { text: t('health.connected'), bad: false };
  if (!(hl.bufferMs > 0)) return { text: t('health.ready', { clock: Math.round(Math.abs(hl.clockOffsetUs || 0)), rtt: Math.round(hl.rttUs || 0) }), bad: false };
  const err = Math.abs(hl.outputErrorUs || 0);
  // Settling: playing on a clock still being learnt (a link that queues); the output follows it by steering.
  let text = hl.settling ? t('health.settling', { us: Math.round(hl.clockUncertaintyUs || 0) })
    : err < 1000 ? t('health.inSync', { us: Math.round(err) }) : t('health.off', { ms: (err / 1000).toFixed(1) });
  text += t('health.buffer', { ms: Math.round(hl.bufferMs) });
  if (hl.underruns) text += ' · ' + count('count.underruns', hl.underruns);
  return { text, bad: err >= 1000 && !hl.settling };
}

// A stereo pair's health: each side's, shortened ("L in sync ±4 µs · R in sync ±6 µs"); a side in trouble in full.
function pairHealth(room) {
  const hs = (room.speakers || []).map((sp) => ({ side: t(sp.side === 'left' ? 'pair.sideL' : 'pair.sideR'), h: health(sp) }));
  const bad = hs.filter((x) => x.h.bad);
  if (bad.length) return { text: bad.map((x) => x.side + ' ' + x.h.text).join(' · '), bad: true };
  return { text: hs.map((x) => x.side + ' ' + x.h.text.split(' · ')[0]).join(' · '), bad: false };
}

export function createRooms(selectGroup, go) {
  const party = h('button.party', { type: 'button', 'data-test': 'party', 'aria-pressed': 'false', onclick: toggleParty });
  const box = h('div.groups');
  // Speakers asking to join this leader (paired by default): allow or deny, or type the code one shows.
  const requests = h('div.pairing', { role: 'region', 'aria-label': t('rooms.asking'), 'aria-live': 'polite', 'data-test': 'pairing' });
  const tokenBox = sendspinToken();
  const el = h('section.view', { id: 'view-rooms', 'aria-label': t('rooms.region') },
    h('header.bar', null, h('h1', { text: t('rooms.title') }),
      h('div.acts', null,
        h('button.btn', { type: 'button', 'data-test': 'pair-new', onclick: () => makePair() }, icon('plus'), t('pair.new')),
        h('button.btn', { type: 'button', 'data-test': 'group-new', onclick: () => newGroup([]) }, icon('plus'), t('rooms.newGroup')))),
    requests, tokenBox, party,
    // Announcements: a row of its own (the bar has room for two buttons on a phone).
    h('div.row', null, h('button.btn', { type: 'button', 'data-test': 'announce', onclick: () => announce() }, icon('announce'), t('announce.button'))),
    box);

  function decide(name, allow) {
    call(allow ? 'speakers.allow' : 'speakers.deny', { name }).then(
      () => toast(t(allow ? 'rooms.mayJoin' : 'rooms.turnedAway', { name }), 'info'),
      (e) => toast(errText(e)));
  }

  function pairWithCode(input, button) {
    const code = input.value.replace(/[\s-]/g, '');
    if (!/^[0-9]{6}$/.test(code)) { toast(t('rooms.codeDigits')); input.focus(); return; }
    button.disabled = true;
    call('speakers.pair', { code }).then((r) => { input.value = ''; toast(t('rooms.paired', { name: r.paired }), 'info'); },
      (e) => toast(errText(e))).finally(() => { button.disabled = false; });
  }

  // A Sendspin player's pairing token (SP:0…, the Pairing PSK method): pasted here, that player may pair.
  function sendspinToken() {
    const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '256', placeholder: 'SP:0…',
      'aria-label': t('rooms.sendspinToken'), 'data-test': 'sendspin-token' });
    const button = h('button.btn.sm.primary', { type: 'submit', 'data-test': 'sendspin-token-submit' }, t('rooms.sendspinPair'));
    const submit = (ev) => {
      ev.preventDefault();
      const token = input.value.trim();
      if (!token) { input.focus(); return; }
      button.disabled = true;
      call('speakers.sendspinToken', { token }).then(() => { input.value = ''; toast(t('rooms.sendspinStaged'), 'info'); },
        (e) => toast(errText(e))).finally(() => { button.disabled = false; });
    };
    return h('details.sendspin-token', { 'data-test': 'sendspin-pairing' }, h('summary', { text: t('rooms.sendspinToken') }),
      h('form.pair-request', { onsubmit: submit }, h('p', null, h('small', { text: t('rooms.sendspinTokenHelp') })), h('div.acts', null, input, button)));
  }

  // A Sendspin player waiting for its pairing code: six digits it shows (dynamic) or eight printed on it (static).
  function sendspinCodeCard(p) {
    const dynamic = p.method === 'dynamic_pairing_code';
    const input = h('input', { type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: dynamic ? '7' : '9',
      placeholder: dynamic ? '123-456' : '1234-5678', 'aria-label': t('rooms.sendspinCodeFor', { name: p.name }), 'data-test': 'sendspin-code' });
    const button = h('button.btn.sm.primary', { type: 'submit', 'data-test': 'sendspin-code-submit' }, t('rooms.pair'));
    const submit = (ev) => {
      ev.preventDefault();
      const code = input.value.replace(/[\s-]/g, '');
      if (!new RegExp('^[0-9]{' + (dynamic ? 6 : 8) + '}$').test(code)) { toast(t(dynamic ? 'rooms.codeDigits' : 'rooms.sendspinCodeDigits')); input.focus(); return; }
      button.disabled = true;
      call('speakers.sendspinCode', { name: p.name, code }).then((r) => {
        input.value = '';
        toast(r.paired ? t('rooms.paired', { name: r.paired }) : t('rooms.sendspinCodeWaits', { name: p.name }), 'info');
      }, (e) => toast(errText(e))).finally(() => { button.disabled = false; });
    };
    return h('form.pair-request', { onsubmit: submit, 'data-test': 'sendspin-code-request', 'data-name': p.name },
      h('p', null, h('span', null, h('b', { text: p.name }), t('rooms.wantsToJoin')),
        h('small', { text: t(dynamic ? 'rooms.sendspinCodeShown' : 'rooms.sendspinCodePrinted') + t('rooms.from', { address: p.address, key: p.key }) })),
      h('div.acts', null, input, button,
        h('button.btn.sm.danger', { type: 'button', 'data-test': 'pair-deny', 'aria-label': t('rooms.denyName', { name: p.name }), onclick: () => decide(p.name, false) }, t('rooms.deny'))));
  }

  function renderRequests() {
    clear(requests);
    const sp = S.speakers;
    tokenBox.hidden = !sp; // a guest cannot pair
    const pending = sp && sp.pending ? sp.pending : [];
    requests.hidden = !pending.length;
    const byApproval = pending.filter((p) => p.by !== 'code');
    for (const p of pending.filter((q) => q.via === 'sendspin' && q.method)) requests.appendChild(sendspinCodeCard(p));
    for (const p of byApproval) {
      requests.appendChild(h('div.pair-request', { 'data-test': 'pair-request', 'data-name': p.name },
        h('p', null, h('span', null, h('b', { text: p.name }), t('rooms.wantsToJoin')),
          h('small', { text: (p.via === 'sendspin' ? t('rooms.sendspin') : '') + t('rooms.from', { address: p.address, key: p.key }) })),
        h('div.acts', null,
          h('button.btn.sm.primary', { type: 'button', 'data-test': 'pair-allow', 'aria-label': t('rooms.allowName', { name: p.name }), onclick: () => decide(p.name, true) }, t('rooms.allow')),
          h('button.btn.sm.danger', { type: 'button', 'data-test': 'pair-deny', 'aria-label': t('rooms.denyName', { name: p.name }), onclick: () => decide(p.name, false) }, t('rooms.deny')))));
    }
    const byCode = pending.filter((p) => p.by === 'code' && p.via !== 'sendspin');
    if (byCode.length) {
      const input = h('input', { type: 'text', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: '7', placeholder: '123 456',
        'aria-label': t('rooms.pairingCode'), 'data-test': 'pair-code' });
      const button = h('button.btn.sm.primary', { type: 'submit', 'data-test': 'pair-submit' }, t('rooms.pair'));
      requests.appendChild(h('form.pair-request', { onsubmit: (ev) => { ev.preventDefault(); pairWithCode(input, button); } },
        h('p', null, h('span', null, h('b', { text: byCode.map((p) => p.name).join(', ') }), t(byCode.length > 1 ? 'rooms.waitCodes' : 'rooms.waitCode')),
          h('small', { text: t('rooms.typeCode') })),
        h('div.acts', null, input, button)));
    }
  }

  const cards = new Map(), sections = new Map();
  let noGroupVolume = false;

  function toggleParty() {
    const on_ = !S.party;
    call(on_ ? 'party.on' : 'party.off', on_ ? { group: S.group } : {}).then(() => call('party.status')).then((r) => {
      S.party = !!r.party;
      renderParty();
      toast(S.party ? t('rooms.partyOn', { name: groupName(S.group) }) : t('rooms.partyOff'), 'info');
    }, (e) => toast(errText(e)));
  }

  function groupName(id) { const g = groupById(id); return g ? g.name : id; }

  function renderParty() {
    party.setAttribute('aria-pressed', String(!!S.party));
    party.dataset.on = S.party ? '1' : '0';
    clear(party).appendChild(icon('party'));
    party.appendChild(h('span', null, h('b', { text: t(S.party ? 'rooms.partyIsOn' : 'rooms.party') }),
      h('small', { text: S.party ? t('rooms.partyTapOff') : t('rooms.partyEvery', { name: groupName(S.group) }) })));
  }

  function newGroup(rooms) {
    return ask(rooms.length ? t('rooms.newGroupWith', { room: rooms[0] }) : t('rooms.newGroup'), '', t('ui.create')).then((name) => {
      if (!name) return;
      return call('groups.create', { name, rooms }).then((g) => toast(t('rooms.created', { name: g.name }), 'info'), (e) => toast(errText(e)));
    });
  }

  function moveRoom(room, target, sel) {
    let job;
    if (target === NEW) job = newGroup([room]);
    else if (target === OWN) job = call('groups.separate', { room }).then(null, (e) => toast(errText(e)));
    else job = call('groups.add', { group: target, rooms: [room] }).then(null, (e) => toast(errText(e)));
    // While the move (and its dialog) is under way the picker shows the choice;
    // then where the room really is (update keeps dataset.group current).
    sel.dataset.moving = '1';
    Promise.resolve(job).then(() => { delete sel.dataset.moving; sel.value = sel.dataset.group || 'main'; });
  }

  // "Announce": text spoken (or a chime's URL played) over what the chosen rooms play, the music ducked.
  function announce() {
    const names = S.rooms.filter((r) => r.connected).map((r) => r.name);
    if (!names.length) { toast(t('announce.noRooms')); return; }
    const text = h('input.field', { type: 'text', 'data-test': 'announce-text', 'aria-label': t('announce.sayLabel'), placeholder: t('announce.placeholder'), autocomplete: 'off' });
    const lang = h('select.picker', { 'data-test': 'announce-lang', 'aria-label': t('announce.voice') });
    for (const [v, label] of [['en', 'English'], ['ko', '한국어'], ['de', 'Deutsch'], ['fr', 'Français'], ['es', 'Español'], ['ja', '日本語']]) lang.appendChild(h('option', { value: v, text: label }));
    const boxes = names.map((n) => h('input', { type: 'checkbox', checked: true, value: n, 'data-test': 'announce-room', 'aria-label': n }));
    const rooms = h('div.checks', null, ...boxes.map((b) => h('label', null, b, ' ' + b.value)));
    const read = () => {
      const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
      const said = text.value.trim();
      if (!said) { toast(t('announce.needText')); return null; }
      if (!chosen.length) { toast(t('announce.needRoom')); return null; }
      return { rooms: chosen, said };
    };
    formBox(t('announce.title'), [[t('announce.say'), text], [t('announce.voice'), lang], [t('announce.rooms'), rooms]], read, t('announce.button')).then((v) => {
      if (!v) return;
      const params = { rooms: v.rooms };
      if (/^(https?:\/\/|\/)/.test(v.said)) params.url = v.said; else { params.text = v.said; params.lang = lang.value; }
      call('announce', params).then((r) => {
        const skipped = r.cannotMix || [];
        toast(t('announce.sent', { rooms: r.speakers.join(', ') }) + (skipped.length ? ' · ' + t('announce.skipped', { rooms: skipped.join(', ') }) : ''), 'info');
      }, (e) => toast(errText(e)));
    });
  }

  // "Make a stereo pair": two rooms (not already pairs) become one, the first plays left.
  function makePair() {
    const free = S.rooms.filter((r) => !r.pair).map((r) => r.name);
    if (free.length < 2) { toast(t('pair.needsTwo')); return; }
    const pick = (test, label, i) => {
      const sel = h('select.picker', { 'data-test': test, 'aria-label': label });
      for (const n of free) sel.appendChild(h('option', { value: n, text: n }));
      sel.value = free[i];
      return sel;
    };
    const left = pick('pair-left', t('pair.leftSpeaker'), 0), right = pick('pair-right', t('pair.rightSpeaker'), 1);
    const name = h('input.field', { type: 'text', 'data-test': 'pair-name', 'aria-label': t('pair.name'), placeholder: free[0] + ' + ' + free[1], autocomplete: 'off' });
    const read = () => {
      if (left.value === right.value) { toast(t('pair.twoDifferent')); return null; }
      return { left: left.value, right: right.value, name: name.value.trim() };
    };
    formBox(t('pair.make'), [[t('pair.left'), left], [t('pair.right'), right], [t('pair.nameField'), name]], read, t('rooms.pair')).then((v) => {
      if (!v) return;
      const params = { left: v.left, right: v.right };
      if (v.name) params.name = v.name;
      call('rooms.pair', params).then((p) => toast(t('pair.made', { name: p.name, left: v.left, right: v.right }), 'info'), (e) => toast(errText(e)));
    });
  }

  function setChannels(name, map, sel) {
    call('rooms.setChannels', { room: name, channels: map }).then(null, (e) => {
      toast(errText(e));
      sel.value = sel.dataset.channels || 'stereo';
    });
  }

  // A pair's speakers: each side with its own latency trim.
  function renderPair(c, room) {
    const key = JSON.stringify(room.speakers.map((sp) => [sp.name, sp.side, Math.round(sp.latencyMs || 0), !!sp.connected]));
    if (c.pairRow.dataset.key === key && c.pairRow.contains(document.activeElement)) return;
    c.pairRow.dataset.key = key;
    clear(c.pairRow);
    for (const sp of room.speakers) {
      const lat = h('input.field.lat', { type: 'number', min: '-1000', max: '5000', step: '1', inputmode: 'numeric', value: String(Math.round(sp.latencyMs || 0)),
        'data-test': 'pair-speaker-latency', 'aria-label': t('rooms.latencyOf', { name: sp.name }) });
      lat.addEventListener('change', () => {
        const v = Math.round(+lat.value);
        if (!isFinite(v) || v < -1000 || v > 5000) { toast(t('rooms.latencyRange')); return; }
        setRoom(sp.name, { latencyMs: v });
      });
      c.pairRow.appendChild(h('div.pspk', { 'data-test': 'pair-speaker', 'data-side': sp.side, 'data-speaker': sp.name },
        h('span.lbl', { text: t(sp.side === 'left' ? 'pair.sideL' : 'pair.sideR') + ' · ' + (sp.connected ? sp.name : t('pair.offline', { name: sp.name })) }), lat, h('span.lbl', { text: t('rooms.ms') })));
    }
    c.pairRow.appendChild(h('div.acts', null,
      h('button.btn.sm', { type: 'button', 'data-test': 'pair-swap', onclick: () => act('rooms.swapPair', { room: c.name }) }, t('pair.swap')),
      h('button.btn.sm', { type: 'button', 'data-test': 'pair-unpair', onclick: () => {
        confirmBox(t('pair.unpairAsk', { name: c.name }), t('pair.unpair')).then((yes) => { if (yes) act('rooms.unpair', { room: c.name }); });
      } }, t('pair.unpair'))));
  }

  function setRoom(name, params) {
    return call('rooms.set', Object.assign({ room: name }, params)).then(null, (e) => toast(errText(e)));
  }

  function makeCard(name) {
    const c = { name };
    c.status = h('span.hl', { 'data-test': 'room-health' });
    c.vol = h('input.vol', { type: 'range', min: '0', max: '100', step: '1', 'data-test': 'room-volume', 'aria-label': t('rooms.volumeOf', { name }) });
    c.volText = h('span.num', { 'data-test': 'room-volume-value' });
    c.mute = iconButton('vol', t('rooms.mute', { name }), 'room-mute', () => setRoom(name, { muted: !c.muted }), 'toggle');
    c.group = h('select.picker', { 'data-test': 'room-group', 'aria-label': t('rooms.groupOf', { name }), onchange: () => moveRoom(name, c.group.value, c.group) });
    c.chan = h('select.picker', { 'data-test': 'room-channels', 'aria-label': t('chan.of', { name }), onchange: () => { c.chanChosenAt = Date.now(); setChannels(name, c.chan.value, c.chan); } });
    for (const o of CHANNELS) c.chan.appendChild(h('option', { value: o, text: t('chan.' + o) }));
    c.chanBox = h('label.glabel', null, h('span', { text: t('chan.label') }), c.chan);
    c.pairRow = h('div.prow', { 'data-test': 'pair-speakers', hidden: true });
    c.lat = h('input.field.lat', { type: 'number', min: '-1000', max: '5000', step: '1', inputmode: 'numeric', 'data-test': 'room-latency', 'aria-label': t('rooms.latencyOf', { name }) });
    const sendLatency = () => {
      const v = Math.round(+c.lat.value);
      if (!isFinite(v) || v < -1000 || v > 5000) { toast(t('rooms.latencyRange')); update(c); return; }
      setRoom(name, { latencyMs: v });
    };
    c.lat.addEventListener('change', sendLatency);
    const nudge = (d) => { c.lat.value = String(Math.round(+c.lat.value || 0) + d); sendLatency(); };
    const sendVol = throttle((v) => setRoom(name, { volume: v }), 120);
    c.vol.addEventListener('input', () => { c.dragging = true; c.volText.textContent = c.vol.value; c.vol.setAttribute('aria-valuetext', c.vol.value + '%'); sendVol(+c.vol.value); });
    c.vol.addEventListener('change', () => { sendVol(+c.vol.value); setTimeout(() => { c.dragging = false; }, 400); });
    c.latBox = h('div.latbox', null,
          h('span.lbl', { text: t('rooms.latency') }),
          iconButton('minus', t('rooms.lessLatency', { name }), 'room-latency-down', () => nudge(-5), 'sm'),
          c.lat,
          iconButton('plus', t('rooms.moreLatency', { name }), 'room-latency-up', () => nudge(5), 'sm'),
          h('span.lbl', { text: t('rooms.ms') }));
    c.el = h('article.room', { 'data-test': 'room', 'data-room': name },
      h('div.rt', null, h('h3', { text: name }), c.status),
      h('div.vrow', null, c.mute, c.vol, c.volText),
      h('div.orow', null, h('label.glabel', null, h('span', { text: t('rooms.group') }), c.group), c.latBox),
      h('div.orow', null, c.chanBox),
      c.pairRow);
    return c;
  }

  function update(c, groupId) {
    let room = null;
    for (const r of S.rooms) if (r.name === c.name) room = r;
    const hl = room && room.pair ? pairHealth(room) : health(room);
    c.el.classList.toggle('offline', !room || !room.connected);
    c.el.dataset.connected = room && room.connected ? '1' : '0';
    c.status.textContent = hl.text;
    c.status.classList.toggle('bad', hl.bad);
    if (room) {
      if (!c.dragging) { c.vol.value = String(room.volume); c.volText.textContent = String(room.volume); c.vol.setAttribute('aria-valuetext', room.volume + '%'); }
      c.vol.dataset.volume = String(room.volume);
      c.muted = !!room.muted;
      c.el.classList.toggle('muted', c.muted);
      c.mute.setAttribute('aria-pressed', String(c.muted));
      const label = t(c.muted ? 'rooms.unmute' : 'rooms.mute', { name: c.name });
      if (c.mute.getAttribute('aria-label') !== label) {
        c.mute.replaceChild(icon(c.muted ? 'mute' : 'vol'), c.mute.firstChild);
        c.mute.setAttribute('aria-label', label);
        c.mute.title = label;
      }
      if (document.activeElement !== c.lat) c.lat.value = String(Math.round(room.latencyMs || 0));
      const paired = !!room.pair;
      c.el.dataset.pair = paired ? '1' : '0';
      c.chanBox.hidden = paired;
      c.latBox.hidden = paired; // each speaker of a pair has its own trim, below
      c.pairRow.hidden = !paired;
      if (paired) renderPair(c, room);
      else {
        c.chan.dataset.channels = room.channels || 'stereo';
        // A select keeps focus after a choice: only the second after it is left alone (see sound.js).
        if (Date.now() - (c.chanChosenAt || 0) > 1000) c.chan.value = room.channels || 'stereo';
      }
    }
    if (groupId !== undefined) {
      c.group.dataset.group = groupId;
      const opts = S.groups.map((g) => [g.id, g.name]).concat([[OWN, t('rooms.ownGroup')], [NEW, t('rooms.newGroupItem')]]);
      const key = JSON.stringify(opts);
      if (c.group.dataset.opts !== key) {
        clear(c.group);
        for (const o of opts) c.group.appendChild(h('option', { value: o[0], text: o[1] }));
        c.group.dataset.opts = key;
      }
      // Not only when unfocused: focus comes back to the picker after its New group dialog.
      if (c.group.dataset.moving !== '1') c.group.value = groupId;
    }
  }

  function makeSection(g) {
    const s = { id: g.id };
    s.title = h('h2');
    s.sub = h('p.s', { 'data-test': 'group-playing' });
    s.gvol = h('input.vol', { type: 'range', min: '0', max: '100', step: '1', 'data-test': 'group-volume', 'aria-label': t('rooms.groupVolume', { name: g.name }) });
    s.gvolText = h('span.num');
    s.control = h('button.btn.sm', { type: 'button', 'data-test': 'group-control', onclick: () => { selectGroup(s.id); go('now'); } }, t('rooms.control'));
    s.rename = iconButton('edit', t('rooms.renameGroup', { name: g.name }), 'group-rename', () => rename(s.id), 'sm');
    s.del = iconButton('trash', t('rooms.deleteGroup', { name: g.name }), 'group-delete', () => del(s.id), 'sm');
    s.list = h('div.cards');
    const send = throttle((v) => groupVolume(s, v), 150);
    s.gvol.addEventListener('input', () => { s.dragging = true; s.gvolText.textContent = s.gvol.value; send(+s.gvol.value); });
    s.gvol.addEventListener('change', () => { send(+s.gvol.value); setTimeout(() => { s.dragging = false; s.base = null; }, 400); });
    s.el = h('section.group', { 'data-test': 'group', 'data-group': g.id },
      h('header.gh', null, h('div.gt', null, s.title, s.sub), s.control, s.rename, s.del),
      h('div.vrow.gv', null, h('span.lbl', { text: t('rooms.group') }), s.gvol, s.gvolText),
      s.list);
    return s;
  }

  function roomsOf(id) {
    const g = groupById(id);
    return S.rooms.filter((r) => g && g.rooms.indexOf(r.name) >= 0);
  }

  function groupVolume(s, v) {
    if (!noGroupVolume) {
      return call('groups.volume', { group: s.id, volume: v }).then(null, (e) => {
        if (isUnknownMethod(e)) { noGroupVolume = true; return groupVolume(s, v); }
        toast(errText(e));
      });
    }
    // A leader without groups.volume: scale each room here, keeping the ratios from the drag's start.
    const rooms = roomsOf(s.id);
    if (!s.base) { s.base = {}; for (const r of rooms) s.base[r.name] = r.volume; }
    let top = 0;
    for (const k in s.base) top = Math.max(top, s.base[k]);
    return Promise.all(rooms.map((r) => setRoom(r.name, { volume: top > 0 ? Math.round((s.base[r.name] || 0) * v / top) : v })));
  }

  function rename(id) {
    ask(t('rooms.renameAsk', { name: groupName(id) }), groupName(id), t('ui.rename')).then((name) => {
      if (name) act('groups.rename', { group: id, name });
    });
  }

  function del(id) {
    confirmBox(t('rooms.deleteAsk', { name: groupName(id), main: groupName('main') }), t('ui.delete')).then((yes) => {
      if (yes) act('groups.delete', { group: id });
    });
  }

  function render() {
    renderParty();
    const seen = new Set(), seenRooms = new Set();
    let prevSection = null;
    const placed = new Map();
    for (const g of S.groups) for (const r of g.rooms) placed.set(r, g.id);
    for (const r of S.rooms) if (!placed.has(r.name)) {
      placed.set(r.name, groupById(r.group) ? r.group : 'main');
    }
    for (const g of S.groups) {
      let s = sections.get(g.id);
      if (!s) { s = makeSection(g); sections.set(g.id, s); }
      seen.add(g.id);
      if (prevSection ? prevSection.nextSibling !== s.el : box.firstChild !== s.el) box.insertBefore(s.el, prevSection ? prevSection.nextSibling : box.firstChild);
      prevSection = s.el;
      s.title.textContent = g.name;
      const what = g.title ? g.title + (g.artist ? ' · ' + g.artist : '') : (g.trackCount ? count('count.tracks', g.trackCount) : t('rooms.nothingQueued'));
      const state = ['playing', 'paused', 'stopped', 'idle', 'loading', 'buffering', 'error'].indexOf(g.state) >= 0 ? t('state.' + g.state) : g.state;
      s.sub.textContent = state + ' · ' + what;
      s.control.textContent = t(S.group === g.id ? 'rooms.controlling' : 'rooms.control');
      s.control.setAttribute('aria-label', S.group === g.id ? t('rooms.controlling') + ' · ' + g.name : t('rooms.controlGroup', { name: g.name }));
      s.rename.setAttribute('aria-label', t('rooms.renameGroup', { name: g.name })); s.rename.title = s.rename.getAttribute('aria-label');
      s.del.setAttribute('aria-label', t('rooms.deleteGroup', { name: g.name })); s.del.title = s.del.getAttribute('aria-label');
      s.gvol.setAttribute('aria-label', t('rooms.groupVolume', { name: g.name }));
      s.control.disabled = S.group === g.id;
      s.del.hidden = s.rename.hidden = false;
      s.del.hidden = g.id === 'main';
      const names = [];
      placed.forEach((gid, name) => { if (gid === g.id) names.push(name); });
      names.sort();
      const live = roomsOf(g.id).filter((r) => r.connected);
      let top = 0; // the group's volume is its loudest room's
      for (const r of live) top = Math.max(top, r.volume);
      // (groups.list also has a volume, but rooms.changed is what follows every volume change)
      if (!s.dragging) { s.gvol.value = String(top); s.gvolText.textContent = String(top); }
      s.gvol.disabled = !live.length;
      let prev = null;
      for (const name of names) {
        let c = cards.get(name);
        if (!c) { c = makeCard(name); cards.set(name, c); }
        seenRooms.add(name);
        update(c, g.id);
        const want = prev ? prev.nextSibling : s.list.firstChild;
        if (want !== c.el) s.list.insertBefore(c.el, want);
        prev = c.el;
      }
      if (!names.length && !s.list.querySelector('.empty')) s.list.appendChild(h('p.empty', { text: t('rooms.noRooms') }));
      const empty = s.list.querySelector('.empty');
      if (names.length && empty) empty.remove();
    }
    sections.forEach((s, id) => { if (!seen.has(id)) { s.el.remove(); sections.delete(id); } });
    cards.forEach((c, name) => { if (!seenRooms.has(name)) { c.el.remove(); cards.delete(name); } });
  }

  on('rooms', render);
  on('groups', render);
  on('party', renderParty);
  on('group', render);
  on('speakers', renderRequests);
  render();
  renderRequests();
  el.refresh = () => call('rooms.list').then((r) => { S.rooms = r.rooms || []; render(); }, (e) => toast(errText(e)));
  return el;
}
