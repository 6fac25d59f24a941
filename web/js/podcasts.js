// Podcasts: the shows subscribed to (subscribe by feed URL), and one show:
// its artwork, what the feed says about it, and its episodes newest first
// with played/unplayed, how far in each one is, play (resuming) and
// marking played. Feed text is always put in as text (textContent), never
// as markup: the leader already strips HTML, and this page would show a
// surviving tag as characters rather than run it.

import { h, toast, errText, emptyNote, icon, iconButton, fmtTime, confirmBox, hue } from './ui.js';
import { t, count, date } from './i18n.js';
import { call, gp } from './rpc.js';
import { S } from './store.js';
import { applyStatus } from './actions.js';

// A show's or episode's artwork from its feed; a coloured note when it has none or it fails.
function cover(url, name, cls) {
  const ph = () => h('div.art.ph.' + cls, { 'aria-hidden': 'true', style: '--h:' + hue(name || '') }, icon('radio'));
  if (!url || !/^https?:\/\//i.test(url)) return ph();
  const img = h('img.art.' + cls, { src: url, alt: '', loading: 'lazy', decoding: 'async', referrerpolicy: 'no-referrer', 'data-test': 'podcast-art' });
  img.addEventListener('error', () => { if (img.parentNode) img.parentNode.replaceChild(ph(), img); });
  return img;
}

function day(ms) {
  if (!ms) return '';
  return date(ms, { year: 'numeric', month: 'short', day: 'numeric' });
}

export function podcastsPage(_, ctx) {
  const input = h('input.field', { type: 'url', placeholder: 'https://example.com/feed.xml', 'aria-label': t('pod.feedURL'),
    'data-test': 'podcast-url', autocapitalize: 'off', spellcheck: 'false', inputmode: 'url' });
  const button = h('button.btn.primary', { type: 'submit', 'data-test': 'podcast-subscribe' }, icon('plus'), t('pod.subscribe'));
  function subscribe() {
    const url = input.value.trim();
    if (!/^https?:\/\/[^\s/]+/i.test(url)) { toast(t('pod.badURL')); input.focus(); return; }
    button.disabled = true;
    call('podcasts.subscribe', { url }).then((p) => {
      toast(t('pod.subscribed', { title: p.title }), 'info');
      ctx.go('library/podcast/' + p.id);
    }, (e) => { button.disabled = false; toast(errText(e)); });
  }
  return call('podcasts.list').then((r) => {
    const list = r.podcasts || [];
    return [ctx.page(t('lib.podcasts')),
      h('form.stack', { onsubmit: (e) => { e.preventDefault(); subscribe(); } }, input, h('div.row', null, button)),
      list.length ? h('ul.list', null, list.map((p) => h('li.row', { 'data-test': 'podcast-row', 'data-id': p.id },
        h('button.main', { type: 'button', onclick: () => ctx.go('library/podcast/' + p.id) },
          cover(p.image, p.title, 'sm'),
          h('span.txt', null, h('span.t', { text: p.title }),
            h('span.s', { text: [p.author, count('count.episodes', p.episodes) + (p.unplayed ? ' · ' + t('pod.unplayed', { n: p.unplayed }) : '')].filter(Boolean).join(' · ') })))))) :
        emptyNote(t('pod.none'))];
  });
}

function episodeRow(e, show, ctx) {
  const started = !e.played && e.position >= 1;
  const state = e.played ? 'played' : (started ? 'started' : 'new');
  const sub = [day(e.published), e.duration ? (started ? t('pod.of', { position: fmtTime(e.position), duration: fmtTime(e.duration) }) : fmtTime(e.duration)) : null,
    e.played ? t('pod.played') : null].filter(Boolean).join(' · ');
  const progress = started && e.duration ? h('progress.prog', { max: String(Math.round(e.duration)), value: String(Math.round(e.position)),
    'aria-label': t('pod.listened', { position: fmtTime(e.position), duration: fmtTime(e.duration) }), 'data-test': 'episode-progress' }) : null;
  return h('li.row.episode', { 'data-test': 'episode-row', 'data-id': e.id, 'data-state': state },
    h('button.main', { type: 'button', 'aria-label': t(started ? 'pod.resume' : 'pod.playEpisode', { title: e.title }), onclick: () => play(show, e) },
      h('span.txt', null, h('span.t', { text: e.title, class: e.played ? 'done' : null }), h('span.s', { text: sub }), progress,
        e.description ? h('span.s.desc', { text: e.description, 'data-test': 'episode-description' }) : null)),
    iconButton(e.played ? 'undo' : 'check', t(e.played ? 'pod.markUnplayed' : 'pod.markPlayed', { title: e.title }), 'episode-played',
      () => call('podcasts.setPlayed', { podcast: show.id, episode: e.id, played: !e.played }).then(() => ctx.rerender(), (err) => toast(errText(err)))));
}

function play(show, e) {
  const g = S.group;
  call('podcasts.play', gp({ podcast: show.id, episode: e.id })).then((r) => {
    applyStatus(r, g);
    toast(r.resumedAt >= 1 ? t('pod.resuming', { title: e.title, position: fmtTime(r.resumedAt) }) : t('pod.playing', { title: e.title }), 'info');
  }, (err) => toast(errText(err)));
}

export function podcastPage(args, ctx) {
  const id = +args[0];
  return call('podcasts.episodes', { podcast: id }).then((r) => {
    const show = r.podcast, episodes = r.episodes || [];
    const refresh = () => call('podcasts.refresh', { podcast: id }).then((o) => {
      const p = (o.podcasts || [])[0] || {};
      toast(p.error ? p.error : (p.added ? count('count.newEpisodes', p.added) : t('pod.noNew')), p.error ? 'error' : 'info');
      ctx.rerender();
    }, (e) => toast(errText(e)));
    const remove = () => confirmBox(t('pod.unsubscribeAsk', { title: show.title }), t('pod.unsubscribe')).then((yes) => {
      if (yes) call('podcasts.unsubscribe', { podcast: id }).then(() => ctx.go('library/podcasts'), (e) => toast(errText(e)));
    });
    return [ctx.page(show.title, true, [iconButton('refresh', t('pod.refresh', { title: show.title }), 'podcast-refresh', refresh)]),
      h('div.albumhead', null, cover(show.image, show.title, 'mid'),
        h('div.txt', null,
          show.author ? h('span.s', { text: show.author, 'data-test': 'podcast-author' }) : null,
          h('span.s', { text: count('count.episodes', show.episodes) + ' · ' + t('pod.unplayed', { n: show.unplayed }) }),
          show.description ? h('span.s.desc', { text: show.description, 'data-test': 'podcast-description' }) : null,
          show.refreshError ? h('span.s.err', { text: t('pod.refreshFailed', { error: show.refreshError }) }) : null,
          h('div.row', null, h('button.btn', { type: 'button', 'data-test': 'podcast-unsubscribe', onclick: remove }, t('pod.unsubscribe'))))),
      episodes.length ? h('ul.list', { 'data-test': 'episode-list' }, episodes.map((e) => episodeRow(e, show, ctx))) : emptyNote(t('pod.noEpisodes'))];
  });
}
