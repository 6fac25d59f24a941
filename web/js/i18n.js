// The page's words: every string a person sees, by key, in each language
// (English here, the others in lang/CODE.js, fetched only for a page in that
// language; docs/translating.md says how to add one). The language is the
// one chosen in Sound → This phone (kept on the phone), else the first of the
// browser's languages that is here, else English. Numbers and dates go
// through Intl in that language. A key missing from a language shows its
// English text (and Tests/Web/i18n_test.py fails).

export const EN = {
  // Screens and tabs
  'tab.now': 'Playing', 'tab.queue': 'Queue', 'tab.search': 'Search', 'tab.library': 'Library', 'tab.rooms': 'Rooms', 'tab.sound': 'Sound',
  'nav.screens': 'Screens',
  // Connection
  'conn.connecting': 'Connecting to the leader…', 'conn.reconnecting': 'Reconnecting to the leader…',
  'conn.notJSON': 'The leader sent something that is not JSON',
  'conn.password': 'Password for this Tutti', 'conn.passwordGuest': 'Password for this Tutti (Cancel: only look)', 'conn.login': 'Log in',
  'rpc.unknownMethod': 'This leader does not know “{method}” yet (update tuttid)', 'rpc.refused': 'the leader refused {method}',
  'rpc.lost': 'the connection to the leader was lost', 'rpc.notConnected': 'not connected to the leader (reconnecting…)',
  'rpc.tooLarge': '{method} is too large to send ({size} KiB; the leader takes at most {max} KiB at once)',
  'rpc.timeout': 'the leader did not answer {method} in time',
  // Shared
  'ui.error': 'something went wrong', 'ui.dismiss': 'Dismiss', 'ui.cancel': 'Cancel', 'ui.ok': 'OK', 'ui.back': 'Back',
  'ui.play': 'Play', 'ui.pause': 'Pause', 'ui.add': 'Add', 'ui.save': 'Save', 'ui.clear': 'Clear', 'ui.create': 'Create',
  'ui.rename': 'Rename', 'ui.delete': 'Delete', 'ui.new': 'New', 'ui.addToQueue': 'Add to queue', 'ui.playNow': 'Play now',
  'count.tracks': { one: '{n} track', other: '{n} tracks' }, 'count.albums': { one: '{n} album', other: '{n} albums' },
  'count.episodes': { one: '{n} episode', other: '{n} episodes' }, 'count.newEpisodes': { one: '{n} new episode', other: '{n} new episodes' },
  'count.underruns': { one: '{n} underrun', other: '{n} underruns' },
  // Now playing
  'state.playing': 'Playing', 'state.paused': 'Paused', 'state.stopped': 'Stopped', 'state.idle': 'Nothing queued',
  'state.loading': 'Opening the stream…', 'state.buffering': 'Buffering…', 'state.error': 'Stopped by an error',
  'now.title': 'Now playing', 'now.groupPicker': 'Group this phone controls', 'now.playingIn': 'Playing in',
  'now.like': 'Like', 'now.unlike': 'Unlike', 'now.position': 'Position', 'now.shuffle': 'Shuffle',
  'now.repeat.off': 'Repeat: off', 'now.repeat.all': 'Repeat: all', 'now.repeat.one': 'Repeat: one',
  'now.previous': 'Previous', 'now.next': 'Next', 'now.nothing': 'Nothing playing', 'now.untitled': 'Untitled',
  'now.radio': 'Radio stream', 'now.stoppedBy': 'Stopped: {error}', 'now.lastError': '{state} · last error: {error}', 'now.live': 'live',
  'now.liked': 'Added to favourites', 'now.unliked': 'Removed from favourites', 'now.noRooms': '{name} (no rooms)',
  'now.silent': 'no rooms: nothing is heard', 'now.show': 'Show now playing', 'now.volume': 'Volume',
  'now.groupGone': 'The group you controlled is gone: now controlling {name}',
  'now.mainGroup': 'the main group', 'now.skipBack': 'Back 15 seconds', 'now.skipForward': 'Forward 15 seconds',
  // Queue
  'queue.title': 'Queue', 'queue.empty': 'The queue is empty. Add music from Search or the Library.',
  'queue.playFrom': 'Play {title} from here', 'queue.up': 'Move {title} up', 'queue.down': 'Move {title} down',
  'queue.remove': 'Remove {title} from the queue', 'queue.first': 'That track is already first', 'queue.last': 'That track is already last',
  'queue.alreadyEmpty': 'The queue is already empty', 'queue.clearAsk': 'Remove all {tracks} from the queue?',
  'queue.nothingToSave': 'The queue is empty: nothing to save', 'queue.saveAs': 'Save the queue as a playlist',
  'queue.saved': 'Saved “{name}”: {tracks}', 'queue.savedMissing': 'Saved “{name}”: {tracks} ({missing} not in the library left out)',
  'queue.stream': 'Stream · {host}', 'queue.moved': 'Moved {title} to position {n}',
  // Actions
  'add.nothing': 'Nothing was added to the queue', 'add.next': '{tracks} will play next', 'add.end': '{tracks} added to the queue',
  'add.labelled': '{label}: {text}', 'add.gone': 'the added track is not in the queue any more',
  // Search
  'search.placeholder': 'Artists, albums, tracks', 'search.label': 'Search the library', 'search.nothing': 'Nothing found for “{query}”.',
  'search.artists': 'Artists', 'search.albums': 'Albums', 'search.tracks': 'Tracks', 'search.tracksSoFar': 'Tracks ({n} so far)',
  'search.tracksAll': 'Tracks ({n})', 'search.addAllResults': 'Add all results', 'search.allResults': 'All results',
  'search.stream': 'Stream', 'search.playStream': 'Play this stream', 'search.hint': 'Search your music by artist, album or title.',
  'search.recent': 'Recent searches',
  // Library
  'lib.sections': 'Library sections', 'lib.artists': 'Artists', 'lib.albums': 'Albums', 'lib.playlists': 'Playlists',
  'lib.favourites': 'Favourites', 'lib.history': 'History', 'lib.radio': 'Radio', 'lib.podcasts': 'Podcasts', 'lib.title': 'Library',
  'lib.noArtists': 'No artists in the library yet.', 'lib.noAlbums': 'No albums in the library yet.', 'lib.noAlbumsBy': 'No albums by {name}.',
  'lib.addAll': 'Add all', 'lib.unlike': 'Unlike {title}', 'lib.noFavourites': 'No favourites yet: tap the heart on Now playing.',
  'lib.nothingPlayed': 'Nothing played yet.', 'lib.genres': 'Genres', 'lib.noGenres': 'No genres: none of the tracks is tagged with one.',
  'lib.noAlbumsIn': 'No albums in {name}.',
  // Track lists
  'track.playNow': 'Play {title} now', 'track.playNext': 'Play {title} next', 'track.add': 'Add {title} to the queue',
  'track.toPlaylist': 'Add {title} to a playlist', 'track.playingNow': '{label} (playing now)',
  'track.preview': 'Preview {title} on this phone', 'preview.failed': 'The preview could not be played',
  // Playlists
  'pl.import': 'Import', 'pl.play': 'Play {name}', 'pl.addToQueue': 'Add {name} to the queue',
  'pl.none': 'No playlists yet. Save the queue as one, or import an M3U file.', 'pl.new': 'New playlist',
  'pl.tooLarge': '“{name}” is too large to send ({size} KiB; at most 1 MiB)', 'pl.unreadable': 'Could not read “{name}”',
  'pl.imported': 'Imported “{name}”: {tracks}', 'pl.importedMissing': 'Imported “{name}”: {tracks}, {missing} not found in the library',
  'pl.imported.default': 'Imported', 'pl.playlist': 'Playlist', 'pl.gone': 'This playlist does not exist any more.',
  'pl.export': 'Export', 'pl.removeFrom': 'Remove {title} from {name}', 'pl.empty': 'This playlist is empty.',
  'pl.renameAsk': 'Rename “{name}”', 'pl.deleteAsk': 'Delete the playlist “{name}”?', 'pl.deleted': 'Deleted “{name}”',
  'pl.addTitle': 'Add “{title}” to a playlist', 'pl.newItem': 'New playlist…', 'pl.newName': 'Name of the new playlist',
  'pl.added': 'Added “{title}” to “{name}”',
  // Saving for offline (the leader's cache)
  'offline.save': 'Save for offline', 'offline.saveName': 'Save {name} for offline', 'offline.saving': 'Saving “{name}” for offline…',
  'offline.saved': 'Saved “{name}” for offline ({size})', 'offline.savedName': '{name} is saved for offline',
  'offline.failed': 'Could not save “{name}” for offline: {error}',
  // Radio
  'radio.title': 'Radio and URLs', 'radio.url': 'Stream URL', 'radio.badURL': 'Enter an http:// or https:// address',
  'radio.recent': 'Recent streams', 'radio.play': 'Play {url}', 'radio.add': 'Add {url} to the queue', 'radio.none': 'Streams you play show here.',
  // Podcasts
  'pod.feedURL': 'Podcast feed URL', 'pod.subscribe': 'Subscribe', 'pod.badURL': 'Enter the feed’s http:// or https:// address',
  'pod.subscribed': 'Subscribed to “{title}”', 'pod.unplayed': '{n} unplayed', 'pod.none': 'No podcasts yet. Paste a feed’s address above to subscribe.',
  'pod.of': '{position} of {duration}', 'pod.played': 'Played', 'pod.listened': 'Listened to {position} of {duration}',
  'pod.resume': 'Resume {title}', 'pod.playEpisode': 'Play {title}', 'pod.markUnplayed': 'Mark {title} unplayed', 'pod.markPlayed': 'Mark {title} played',
  'pod.resuming': 'Resuming “{title}” at {position}', 'pod.playing': 'Playing “{title}”', 'pod.noNew': 'No new episodes',
  'pod.unsubscribeAsk': 'Unsubscribe from “{title}”?', 'pod.unsubscribe': 'Unsubscribe', 'pod.refresh': 'Refresh {title}',
  'pod.refreshFailed': 'Last refresh failed: {error}', 'pod.noEpisodes': 'No episodes.',
  // Rooms
  'rooms.title': 'Rooms', 'rooms.region': 'Rooms and groups', 'rooms.newGroup': 'New group', 'rooms.newGroupWith': 'New group with {room}',
  'rooms.asking': 'Speakers asking to join', 'rooms.mayJoin': 'The {name} speaker may join', 'rooms.turnedAway': 'The {name} speaker was turned away',
  'rooms.codeDigits': 'The code is the six digits the speaker shows', 'rooms.paired': 'Paired the {name} speaker',
  'rooms.wantsToJoin': ' wants to join', 'rooms.sendspin': 'Sendspin player · ', 'rooms.from': 'from {address} · key {key}',
  'rooms.allow': 'Allow', 'rooms.allowName': 'Allow {name}', 'rooms.deny': 'Deny', 'rooms.denyName': 'Deny {name}',
  'rooms.pairingCode': 'Pairing code', 'rooms.pair': 'Pair', 'rooms.waitCodes': ' wait for their code', 'rooms.waitCode': ' waits for its code',
  'rooms.typeCode': 'Type the six digits the speaker shows',
  'rooms.sendspinToken': 'Pair a Sendspin player', 'rooms.sendspinPair': 'Pair',
  'rooms.sendspinTokenHelp': 'Paste the pairing token (SP:0…) the player shows; it pairs when it next connects',
  'rooms.sendspinCodeShown': 'Sendspin player · type the six digits it shows · ', 'rooms.sendspinCodePrinted': 'Sendspin player · type the eight-digit code printed on it · ',
  'rooms.sendspinCodeFor': 'Pairing code of {name}', 'rooms.sendspinCodeDigits': 'The code is the eight digits printed on the player',
  'rooms.sendspinCodeWaits': 'The code waits for {name}: make its pairing gesture (its button or app)',
  'rooms.sendspinStaged': 'Token kept: the player pairs when it connects',
  'rooms.partyOn': 'Party: every room plays {name}', 'rooms.partyOff': 'Party over: every room is back in its group',
  'rooms.party': 'Party', 'rooms.partyIsOn': 'Party is on', 'rooms.partyTapOff': 'Tap to put every room back in its group',
  'rooms.partyEvery': 'Every room plays {name}', 'rooms.created': 'Created the group “{name}”',
  'rooms.volumeOf': 'Volume of {name}', 'rooms.mute': 'Mute {name}', 'rooms.unmute': 'Unmute {name}', 'rooms.groupOf': 'Group of {name}',
  'rooms.latencyOf': 'Latency trim of {name} in milliseconds', 'rooms.latencyRange': 'The latency trim is between −1000 and 5000 ms',
  'rooms.group': 'Group', 'rooms.latency': 'Latency', 'rooms.lessLatency': 'Less latency trim for {name}',
  'rooms.moreLatency': 'More latency trim for {name}', 'rooms.ms': 'ms', 'rooms.ownGroup': 'Own group (separate)', 'rooms.newGroupItem': 'New group…',
  'rooms.renameAsk': 'Rename “{name}”', 'rooms.deleteAsk': 'Delete the group “{name}”? Its rooms go back to {main}.',
  'rooms.nothingQueued': 'nothing queued', 'rooms.controlling': 'Controlling', 'rooms.control': 'Control',
  'rooms.noRooms': 'No rooms yet: choose this group in a room’s Group picker.', 'rooms.offline': 'The {name} speaker is offline',
  'rooms.online': 'The {name} speaker is connected', 'rooms.controlGroup': 'Control {name} from this phone',
  'rooms.renameGroup': 'Rename {name}', 'rooms.deleteGroup': 'Delete {name}', 'rooms.groupVolume': 'Volume of the group {name}',
  // Announcements
  'announce.button': 'Announce', 'announce.title': 'Announce', 'announce.say': 'Say', 'announce.sayLabel': 'What to say, or a URL to play',
  'announce.placeholder': 'Dinner is ready', 'announce.voice': 'Voice', 'announce.rooms': 'Rooms',
  'announce.noRooms': 'No room has a speaker connected', 'announce.needText': 'Type what to say, or a URL',
  'announce.needRoom': 'Pick at least one room', 'announce.sent': 'Announcing in {rooms}', 'announce.skipped': 'cannot play it: {rooms}',
  // Stereo pairs and channels
  'pair.new': 'Stereo pair', 'pair.needsTwo': 'A stereo pair needs two rooms: connect two speakers first',
  'pair.leftSpeaker': 'Left speaker', 'pair.rightSpeaker': 'Right speaker', 'pair.name': 'Name of the pair',
  'pair.twoDifferent': 'Pick two different rooms', 'pair.make': 'Make a stereo pair', 'pair.left': 'Left', 'pair.right': 'Right',
  'pair.nameField': 'Name', 'pair.made': '{name}: {left} plays left, {right} right', 'pair.sideL': 'L', 'pair.sideR': 'R',
  'pair.offline': '{name} (offline)', 'pair.swap': 'Swap L/R', 'pair.unpair': 'Unpair',
  'pair.unpairAsk': 'Unpair “{name}”? Its two speakers become rooms of their own.',
  'chan.label': 'Channels', 'chan.of': 'Channels of {name}', 'chan.stereo': 'Stereo', 'chan.left': 'Left only', 'chan.right': 'Right only',
  'chan.mono': 'Mono (L+R)', 'chan.swap': 'Swapped',
  'health.offline': 'offline', 'health.connected': 'connected', 'health.ready': 'ready · clock ±{clock} µs · round trip {rtt} µs',
  'health.settling': 'settling ±{us} µs', 'health.inSync': 'in sync ±{us} µs', 'health.off': 'off by {ms} ms', 'health.buffer': ' · buffer {ms} ms',
  // Sound
  'sound.title': 'Sound', 'sound.room': 'Room', 'sound.preset': 'Preset', 'sound.preampDb': 'Preamp in dB', 'sound.speed': 'Speed',
  'sound.speedLabel': 'Playback speed', 'sound.pitch': 'Pitch', 'sound.pitchLabel': 'Pitch in semitones', 'sound.normal': 'Normal',
  'sound.savePreset': 'Save preset', 'sound.autoPreamp': 'Auto preamp', 'sound.tempoTitle': 'Speed and pitch of this group',
  'sound.band': '{band} Hz in dB', 'sound.saveAsk': 'Save these bands as a preset', 'sound.saved': 'Saved the preset “{name}”',
  'sound.custom': 'Custom', 'sound.semitones': '{n} st',
  'settings.title': 'This phone', 'settings.language': 'Language',
  // Tune rooms
  'sound.tune': 'Tune rooms…',
  'sound.reverbTitle': 'Reverb', 'sound.reverbPreset': 'Reverb', 'sound.reverbOff': 'Off', 'sound.reverbMix': 'Mix',
  'sound.reverbMixLabel': 'Reverb mix in percent', 'sound.reverbSmallRoom': 'Small room', 'sound.reverbMediumRoom': 'Medium room',
  'sound.reverbLargeHall': 'Large hall', 'sound.reverbPlate': 'Plate', 'sound.reverbCathedral': 'Cathedral',
  'tune.title': 'Tune rooms', 'tune.intro': 'Stand where you listen and hold the phone still. Each room plays a short sweep, one after another, while this phone listens; the leader then sets every room’s delay so that all of them arrive here together.',
  'tune.rooms': 'Rooms to tune', 'tune.noRooms': 'No room is connected.', 'tune.pickRooms': 'Choose at least one room (two to line rooms up).',
  'tune.start': 'Listen and tune', 'tune.insecure': 'This browser keeps the microphone off on this address (it needs HTTPS, or the leader itself). Play the sweeps below, record them with any recorder, and choose the recording.',
  'tune.elsewhere': 'Record with another device', 'tune.elsewhereHelp': 'Start recording first, then play the sweeps; stop when they are over and choose the file (WAV, M4A, MP3 …, at most 60 s).',
  'tune.playOnly': 'Play the sweeps', 'tune.file': 'Recording to analyse', 'tune.opening': 'Opening the microphone…',
  'tune.noMicrophone': 'The microphone could not be used: {reason}', 'tune.listening': 'Listening: sweeps in {rooms}. Keep quiet…',
  'tune.recordNow': 'Playing sweeps in {rooms}: record now.', 'tune.played': 'The sweeps are over: choose the recording.',
  'tune.stuck': 'The sweeps did not finish in time', 'tune.suspended': 'the browser keeps sound off on this page: tap Listen and tune again', 'tune.reading': 'Reading {name}…', 'tune.cannotDecode': 'This browser cannot read “{name}” as audio',
  'tune.tooLong': 'The recording is too long: at most {max} s is analysed', 'tune.busy': 'The leader is analysing another recording: try again in a few seconds',
  'tune.analysing': 'Analysing the recording…', 'tune.done': 'Measured. Check the rooms below, then apply.',
  'tune.notUsable': 'Not every room was measured well enough to apply: see below.',
  'tune.delay': 'Arrives after the first', 'tune.confidence': 'Confidence', 'tune.trim': 'Latency trim',
  'tune.ms': '{value} ms', 'tune.db': '{value} dB', 'tune.trimChange': '{from} → {to} ms',
  'tune.gapsClosed': 'The recording skipped: {ms} ms of silence it added was taken out before measuring',
  'tune.side': '{side}: {speaker}', 'tune.pairNote': 'A stereo pair: each speaker measured on its own, each with its own trim',
  'tune.response': 'Response and EQ', 'tune.band': 'Band', 'tune.measured': 'Measured', 'tune.eq': 'EQ',
  'tune.applyEq': 'Also set each room’s EQ (“Tuned” preset)', 'tune.apply': 'Apply',
  'tune.applied': 'Applied the latency trims', 'tune.appliedEq': 'Applied the latency trims and the “Tuned” EQ presets',
  // Play here (playhere.js)
  'playhere.region': 'Play here', 'playhere.switch': 'Play here', 'playhere.name': 'Room name',
  'playhere.off': 'Off: this device only controls', 'playhere.joining': 'Joining…', 'playhere.playingAs': 'Playing here as {name}',
  'playhere.logIn': 'Log in to play here',
  'playhere.device.iphone': 'iPhone', 'playhere.device.ipad': 'iPad', 'playhere.device.androidPhone': 'Android phone',
  'playhere.device.androidTablet': 'Android tablet', 'playhere.device.chromebook': 'Chromebook', 'playhere.device.mac': 'Mac',
  'playhere.device.windows': 'Windows PC', 'playhere.device.linux': 'Linux PC', 'playhere.device.browser': 'Browser',
};


// Each language's name in itself, for the picker; all but English are in lang/CODE.js.
export const LANGUAGES = [['en', 'English'], ['ko', '한국어']];
const CODES = LANGUAGES.map((l) => l[0]);
const KEY = 'tutti.lang';

function choose() {
  try {
    const kept = localStorage.getItem(KEY);
    if (kept && CODES.indexOf(kept) >= 0) return kept;
  } catch (e) { /* private mode: the browser's languages */ }
  const wanted = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en']);
  for (const tag of wanted) {
    const code = String(tag).toLowerCase().split(/[-_]/)[0];
    if (CODES.indexOf(code) >= 0) return code;
  }
  return 'en';
}

let lang = choose();
let words = EN;
if (lang !== 'en') {
  // Every module imports this one, so the screens are drawn in the language from the start.
  try { words = (await import('./lang/' + lang + '.js')).default; } catch (e) { lang = 'en'; }
}
document.documentElement.lang = lang;

export function language() { return lang; }

// Keeps the choice on this phone and redraws the page in it.
export function setLanguage(code) {
  if (CODES.indexOf(code) < 0 || code === lang) return;
  try { localStorage.setItem(KEY, code); } catch (e) { /* only for this visit */ }
  location.reload();
}

let numbers = null;
export function num(n) {
  if (!numbers) numbers = new Intl.NumberFormat(lang);
  return numbers.format(n);
}

let plurals = null;
// t('queue.up', { title }) → the text in the page's language, placeholders
// filled; a { one, other } entry is picked by Intl.PluralRules from args.n.
export function t(key, args) {
  let entry = words[key];
  if (entry === undefined) entry = EN[key];
  if (entry === undefined) return key;
  if (typeof entry === 'object') {
    if (!plurals) plurals = new Intl.PluralRules(lang);
    entry = entry[plurals.select(args && typeof args.n === 'number' ? args.n : 0)] || entry.other;
  }
  if (!args) return entry;
  return entry.replace(/\{([a-zA-Z]+)\}/g, (m, name) => {
    const v = args[name];
    if (v === undefined || v === null) return m;
    return typeof v === 'number' ? num(v) : String(v);
  });
}

let sizes = null;
// "4.2 MB" in the page's language.
export function bytes(n) {
  if (!sizes) sizes = new Intl.NumberFormat(lang, { style: 'unit', unit: 'megabyte', maximumFractionDigits: 1 });
  return sizes.format(n / 1e6);
}

// "3 tracks", "3곡": a count with its noun.
export function count(key, n) { return t(key, { n }); }

// The page's date and time words.
export function dateTime(ms, options) { return new Date(ms).toLocaleString(lang, options); }
export function date(ms, options) { return new Date(ms).toLocaleDateString(lang, options); }
export function time(ms, options) { return new Date(ms).toLocaleTimeString(lang, options); }
