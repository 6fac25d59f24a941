// JSON-RPC 2.0 over the leader's WebSocket (/ws): one object per text
// frame. Reconnects by itself with backoff (0.5 s doubling to 5 s), and at
// once when the phone wakes or comes back online. Notifications are
// handed to the listeners registered with onNotify.

import { S, set, emit } from './store.js';
import { toast, errText, askSecret } from './ui.js';
import { t, language } from './i18n.js';

const TIMEOUT_MS = 15000;
// The leader's limit for one WebSocket message (WebServer.maximumMessageBytes): an M3U upload
// of up to 1 MiB (playlists.import's limit for its content) and room for its JSON escapes.
const MAX_MESSAGE = 1024 * 1024 + 64 * 1024;
let ws = null;
let nextId = 1;
const pending = new Map();
let backoff = 500;
let retryTimer = 0;
let everOpen = false;
const listeners = {};

export class RpcError extends Error {
  constructor(code, message, method) {
    super(message);
    this.code = code;
    this.method = method;
  }
}

// Play here (playhere.js): binary messages both ways on the same socket.
let binaryListener = null;
export function onBinary(fn) { binaryListener = fn; }
export function sendBinary(bytes) {
  if (!ws || ws.readyState !== WebSocket.OPEN) return false;
  ws.send(bytes);
  return true;
}

export function onNotify(method, fn) {
  (listeners[method] || (listeners[method] = [])).push(fn);
}

function wsURL() {
  const u = new URL('ws', location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

function banner(text) {
  const b = document.getElementById('banner');
  if (!b) return;
  b.hidden = !text;
  if (text) b.textContent = text;
}

export function connect() {
  clearTimeout(retryTimer);
  retryTimer = 0;
  if (ws && (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)) return;
  banner(t(everOpen ? 'conn.reconnecting' : 'conn.connecting'));
  let sock;
  try {
    sock = new WebSocket(wsURL());
  } catch (e) {
    scheduleRetry();
    return;
  }
  ws = sock;
  sock.binaryType = 'arraybuffer'; // binary messages are Play here's (playhere.js)
  sock.onopen = () => {
    if (ws !== sock) return;
    backoff = 500;
    everOpen = true;
    authenticate().then(() => {
      if (ws !== sock) return;
      banner(null);
      set('connected', true);
      emit('open');
    });
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return;
    if (typeof ev.data !== 'string') { if (binaryListener) binaryListener(ev.data); return; }
    let m;
    try {
      m = JSON.parse(ev.data);
    } catch (e) {
      toast(t('conn.notJSON'));
      return;
    }
    receive(m);
  };
  sock.onclose = () => {
    if (ws !== sock) return;
    ws = null;
    lost();
    scheduleRetry();
  };
  sock.onerror = () => { /* onclose follows and retries */ };
}

// A leader reached from another machine may want its password: the token
// a login returned is kept on this phone, so the password is asked once.
function authenticate() {
  return call('auth.status').then((st) => {
    if (st.access === 'full') return null;
    let token = null;
    try { token = localStorage.getItem('tutti.token'); } catch (e) { /* not kept */ }
    const viaToken = token ? call('auth.login', { token }).then(() => true, () => false) : Promise.resolve(false);
    return viaToken.then((ok) => (ok ? null : askPassword(st)));
  }, () => null); // a leader without auth.*: nothing to do
}

function askPassword(st) {
  banner(null);
  return askSecret(t(st.guest ? 'conn.passwordGuest' : 'conn.password'), t('conn.login')).then((pw) => {
    if (pw === null) return null;
    return call('auth.login', { password: pw }).then((r) => {
      try { if (r.token) localStorage.setItem('tutti.token', r.token); } catch (e) { /* asked again next time */ }
      return null;
    }, (e) => { toast(errText(e)); return askPassword(st); });
  });
}

function receive(m) {
  if (m.id !== undefined && m.id !== null && (m.result !== undefined || m.error)) {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error) p.reject(new RpcError(m.error.code, friendly(m.error, p.method), p.method));
    else p.resolve(m.result);
    return;
  }
  if (m.error) { // an error without an id (a frame the leader could not read)
    toast(errText(m.error));
    return;
  }
  if (m.method) {
    const list = listeners[m.method];
    if (list) for (const fn of list) fn(m.params || {});
  }
}

function friendly(error, method) {
  if (error.code === -32601) return t('rpc.unknownMethod', { method });
  return error.message || t('rpc.refused', { method });
}

function lost() {
  set('connected', false);
  for (const [, p] of pending) {
    clearTimeout(p.timer);
    p.reject(new RpcError(0, t('rpc.lost'), p.method));
  }
  pending.clear();
  banner(t('conn.reconnecting'));
}

function scheduleRetry() {
  if (retryTimer) return;
  retryTimer = setTimeout(() => { retryTimer = 0; connect(); }, backoff);
  backoff = Math.min(backoff * 2, 5000);
}

// After a phone wakes, a socket may look open yet be dead: a cheap request
// proves it, and a fresh fetch of what is shown follows anyway.
function wake() {
  if (document.visibilityState === 'hidden') return;
  if (!ws || ws.readyState !== WebSocket.OPEN) {
    backoff = 500;
    if (ws && ws.readyState === WebSocket.CONNECTING) return;
    clearTimeout(retryTimer);
    retryTimer = 0;
    connect();
    return;
  }
  const sock = ws;
  call('party.status', {}, 4000).then(() => emit('open'), () => {
    if (ws === sock) { ws = null; try { sock.close(); } catch (e) { /* already closed */ } lost(); backoff = 500; connect(); }
  });
}
document.addEventListener('visibilitychange', wake);
window.addEventListener('online', wake);
window.addEventListener('pageshow', (e) => { if (e.persisted) wake(); });

// Sends a request; resolves with its result or rejects with an RpcError
// whose message a person can read.
export function call(method, params, timeoutMs) {
  return new Promise((resolve, reject) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      reject(new RpcError(0, t('rpc.notConnected'), method));
      return;
    }
    const id = nextId++;
    // lang: the leader's errors come in the page's language (docs/api.md).
    const msg = { jsonrpc: '2.0', id, method, lang: language() };
    if (params && Object.keys(params).length) msg.params = params;
    const text = JSON.stringify(msg);
    const bytes = typeof TextEncoder !== 'undefined' ? new TextEncoder().encode(text).length : text.length;
    if (bytes > MAX_MESSAGE) { // the leader would close the connection
      reject(new RpcError(0, t('rpc.tooLarge', { method, size: Math.ceil(bytes / 1024), max: MAX_MESSAGE / 1024 }), method));
      return;
    }
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new RpcError(0, t('rpc.timeout', { method }), method));
    }, timeoutMs || TIMEOUT_MS);
    pending.set(id, { resolve, reject, timer, method });
    ws.send(text);
  });
}

// A call whose failure is shown to the person; resolves to null then.
export function act(method, params) {
  return call(method, params).catch((e) => { toast(errText(e)); return null; });
}

// Adds the controlled group to player.* / queue.* params (none for the main group).
export function gp(params) {
  const p = Object.assign({}, params || {});
  if (S.group && S.group !== 'main') p.group = S.group;
  return p;
}

export const isUnknownMethod = (e) => e && e.code === -32601;
