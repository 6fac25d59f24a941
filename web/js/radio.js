// Radio / URL: an http(s) stream or file URL added to the queue, or
// played now. The last few URLs are kept on this phone (localStorage).
// Now playing shows the stream's ICY station and title.

import { h, toast, icon, iconButton, emptyNote } from './ui.js';
import { addToQueue } from './actions.js';
import { t } from './i18n.js';

const KEY = 'tutti.streams';

function saved() {
  try { return JSON.parse(localStorage.getItem(KEY) || '[]'); } catch (e) { return []; }
}
function keep(url) {
  const list = [url].concat(saved().filter((u) => u !== url)).slice(0, 8);
  try { localStorage.setItem(KEY, JSON.stringify(list)); } catch (e) { /* private mode: not kept */ }
}

export function radioPage(_, ctx) {
  const input = h('input.field', { type: 'url', placeholder: 'https://radio.example/stream.mp3', 'aria-label': t('radio.url'),
    'data-test': 'radio-url', autocapitalize: 'off', spellcheck: 'false', inputmode: 'url' });
  function go(how) {
    const url = input.value.trim();
    if (!/^https?:\/\/[^\s/]+/i.test(url)) { toast(t('radio.badURL')); input.focus(); return; }
    keep(url);
    addToQueue({ uris: [url] }, how, t('search.stream')).then(() => ctx.rerender());
  }
  const list = saved();
  return [ctx.page(t('radio.title')),
    h('form.stack', { onsubmit: (e) => { e.preventDefault(); go('play'); } },
      input,
      h('div.row', null,
        h('button.btn.primary', { type: 'submit', 'data-test': 'radio-play' }, icon('play'), t('ui.playNow')),
        h('button.btn', { type: 'button', 'data-test': 'radio-add', onclick: () => go('end') }, icon('plus'), t('ui.addToQueue')))),
    h('h2.sec', { text: t('radio.recent') }),
    list.length ? h('ul.list', null, list.map((u) => h('li.row', null,
      h('button.main', { type: 'button', 'aria-label': t('radio.play', { url: u }), onclick: () => { keep(u); addToQueue({ uris: [u] }, 'play'); } },
        h('span.art.ph.sm', { 'aria-hidden': 'true', style: '--h:200' }, icon('radio')), h('span.txt', null, h('span.t', { text: u.replace(/^https?:\/\//, '') }))),
      iconButton('plus', t('radio.add', { url: u }), 'radio-recent-add', () => addToQueue({ uris: [u] }, 'end', t('search.stream')))))) :
      emptyNote(t('radio.none'))];
}
