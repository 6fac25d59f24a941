// The page's words: every string a person sees, by key, in each language
// (English and Korean; docs/translating.md says how to add one). The
// language is the one chosen in Sound → This phone (kept on the phone), else
// the first of the browser's languages that is here, else English. Numbers
// and dates go through Intl in that language. A key missing from a language
// shows its English text (and Tests/Web/i18n_test.py fails).

const EN = {
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
  'now.groupVolume': 'Volume of the group', 'now.groupGone': 'The group you controlled is gone: now controlling {name}',
  'now.mainGroup': 'the main group',
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
  'search.artists': 'Artists', 'search.albums': 'Albums', 'search.tracks': 'Tracks', 'search.tracksFirst': 'Tracks (first {n})',
  'search.addAll': 'Add all {tracks}', 'search.addAllResults': 'Add all results', 'search.allResults': 'All results',
  'search.stream': 'Stream', 'search.playStream': 'Play this stream', 'search.hint': 'Search your music by artist, album or title.',
  'search.recent': 'Recent searches',
  // Library
  'lib.sections': 'Library sections', 'lib.artists': 'Artists', 'lib.albums': 'Albums', 'lib.playlists': 'Playlists',
  'lib.favourites': 'Favourites', 'lib.history': 'History', 'lib.radio': 'Radio', 'lib.podcasts': 'Podcasts', 'lib.title': 'Library',
  'lib.noArtists': 'No artists in the library yet.', 'lib.noAlbums': 'No albums in the library yet.', 'lib.noAlbumsBy': 'No albums by {name}.',
  'lib.addAll': 'Add all', 'lib.unlike': 'Unlike {title}', 'lib.noFavourites': 'No favourites yet: tap the heart on Now playing.',
  'lib.nothingPlayed': 'Nothing played yet.',
  // Track lists
  'track.playNow': 'Play {title} now', 'track.playNext': 'Play {title} next', 'track.add': 'Add {title} to the queue',
  // Playlists
  'pl.import': 'Import', 'pl.play': 'Play {name}', 'pl.addToQueue': 'Add {name} to the queue',
  'pl.none': 'No playlists yet. Save the queue as one, or import an M3U file.', 'pl.new': 'New playlist',
  'pl.tooLarge': '“{name}” is too large to send ({size} KiB; at most 1 MiB)', 'pl.unreadable': 'Could not read “{name}”',
  'pl.imported': 'Imported “{name}”: {tracks}', 'pl.importedMissing': 'Imported “{name}”: {tracks}, {missing} not found in the library',
  'pl.imported.default': 'Imported', 'pl.playlist': 'Playlist', 'pl.gone': 'This playlist does not exist any more.',
  'pl.export': 'Export', 'pl.removeFrom': 'Remove {title} from {name}', 'pl.empty': 'This playlist is empty.',
  'pl.renameAsk': 'Rename “{name}”', 'pl.deleteAsk': 'Delete the playlist “{name}”?', 'pl.deleted': 'Deleted “{name}”',
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
  'health.offline': 'offline', 'health.connected': 'connected', 'health.ready': 'ready · clock ±{clock} µs · round trip {rtt} µs',
  'health.settling': 'settling ±{us} µs', 'health.inSync': 'in sync ±{us} µs', 'health.off': 'off by {ms} ms', 'health.buffer': ' · buffer {ms} ms',
  // Sound
  'sound.title': 'Sound', 'sound.room': 'Room', 'sound.preset': 'Preset', 'sound.preampDb': 'Preamp in dB', 'sound.speed': 'Speed',
  'sound.speedLabel': 'Playback speed', 'sound.pitch': 'Pitch', 'sound.pitchLabel': 'Pitch in semitones', 'sound.normal': 'Normal',
  'sound.savePreset': 'Save preset', 'sound.autoPreamp': 'Auto preamp', 'sound.tempoTitle': 'Speed and pitch of this group',
  'sound.band': '{band} Hz in dB', 'sound.saveAsk': 'Save these bands as a preset', 'sound.saved': 'Saved the preset “{name}”',
  'sound.custom': 'Custom', 'sound.semitones': '{n} st',
  'settings.title': 'This phone', 'settings.language': 'Language',
};

const KO = {
  'tab.now': '재생 중', 'tab.queue': '대기열', 'tab.search': '검색', 'tab.library': '보관함', 'tab.rooms': '방', 'tab.sound': '사운드',
  'nav.screens': '화면',
  'conn.connecting': '리더에 연결하는 중…', 'conn.reconnecting': '리더에 다시 연결하는 중…',
  'conn.notJSON': '리더가 JSON이 아닌 것을 보냈습니다',
  'conn.password': '이 Tutti의 비밀번호', 'conn.passwordGuest': '이 Tutti의 비밀번호 (취소: 보기만 하기)', 'conn.login': '로그인',
  'rpc.unknownMethod': '이 리더는 아직 “{method}”을(를) 모릅니다 (tuttid를 업데이트하세요)', 'rpc.refused': '리더가 {method}을(를) 거절했습니다',
  'rpc.lost': '리더와의 연결이 끊겼습니다', 'rpc.notConnected': '리더에 연결되어 있지 않습니다 (다시 연결하는 중…)',
  'rpc.tooLarge': '{method}은(는) 너무 커서 보낼 수 없습니다 ({size} KiB, 리더는 한 번에 최대 {max} KiB를 받습니다)',
  'rpc.timeout': '리더가 제시간에 {method}에 답하지 않았습니다',
  'ui.error': '문제가 생겼습니다', 'ui.dismiss': '닫기', 'ui.cancel': '취소', 'ui.ok': '확인', 'ui.back': '뒤로',
  'ui.play': '재생', 'ui.pause': '일시정지', 'ui.add': '추가', 'ui.save': '저장', 'ui.clear': '비우기', 'ui.create': '만들기',
  'ui.rename': '이름 바꾸기', 'ui.delete': '삭제', 'ui.new': '새로 만들기', 'ui.addToQueue': '대기열에 추가', 'ui.playNow': '지금 재생',
  'count.tracks': '{n}곡', 'count.albums': '앨범 {n}장', 'count.episodes': '에피소드 {n}개', 'count.newEpisodes': '새 에피소드 {n}개',
  'count.underruns': '언더런 {n}회',
  'state.playing': '재생 중', 'state.paused': '일시정지됨', 'state.stopped': '정지됨', 'state.idle': '대기열이 비어 있음',
  'state.loading': '스트림을 여는 중…', 'state.buffering': '버퍼링 중…', 'state.error': '오류로 정지됨',
  'now.title': '지금 재생 중', 'now.groupPicker': '이 휴대폰이 제어하는 그룹', 'now.playingIn': '재생 그룹',
  'now.like': '좋아요', 'now.unlike': '좋아요 취소', 'now.position': '재생 위치', 'now.shuffle': '셔플',
  'now.repeat.off': '반복: 끔', 'now.repeat.all': '반복: 전체', 'now.repeat.one': '반복: 한 곡',
  'now.previous': '이전', 'now.next': '다음', 'now.nothing': '재생 중인 곡 없음', 'now.untitled': '제목 없음',
  'now.radio': '라디오 스트림', 'now.stoppedBy': '정지됨: {error}', 'now.lastError': '{state} · 마지막 오류: {error}', 'now.live': '라이브',
  'now.liked': '즐겨찾기에 추가했습니다', 'now.unliked': '즐겨찾기에서 뺐습니다', 'now.noRooms': '{name} (방 없음)',
  'now.silent': '방 없음: 아무 소리도 나지 않습니다', 'now.show': '지금 재생 중 보기', 'now.volume': '음량',
  'now.groupVolume': '그룹 음량', 'now.groupGone': '제어하던 그룹이 없어졌습니다. 이제 {name}을(를) 제어합니다',
  'now.mainGroup': '기본 그룹',
  'queue.title': '대기열', 'queue.empty': '대기열이 비어 있습니다. 검색이나 보관함에서 음악을 추가하세요.',
  'queue.playFrom': '{title}부터 재생', 'queue.up': '{title} 위로 이동', 'queue.down': '{title} 아래로 이동',
  'queue.remove': '대기열에서 {title} 빼기', 'queue.first': '이미 첫 곡입니다', 'queue.last': '이미 마지막 곡입니다',
  'queue.alreadyEmpty': '대기열이 이미 비어 있습니다', 'queue.clearAsk': '대기열에서 {tracks}을 모두 뺄까요?',
  'queue.nothingToSave': '대기열이 비어 있어 저장할 것이 없습니다', 'queue.saveAs': '대기열을 재생목록으로 저장',
  'queue.saved': '“{name}” 저장: {tracks}', 'queue.savedMissing': '“{name}” 저장: {tracks} (보관함에 없는 {missing}곡은 뺐습니다)',
  'queue.stream': '스트림 · {host}', 'queue.moved': '{title}을(를) {n}번째로 옮겼습니다',
  'add.nothing': '대기열에 아무것도 추가되지 않았습니다', 'add.next': '{tracks}이 다음에 재생됩니다', 'add.end': '{tracks}을 대기열에 추가했습니다',
  'add.labelled': '{label}: {text}', 'add.gone': '추가한 곡이 더 이상 대기열에 없습니다',
  'search.placeholder': '아티스트, 앨범, 곡', 'search.label': '보관함 검색', 'search.nothing': '“{query}”에 대한 결과가 없습니다.',
  'search.artists': '아티스트', 'search.albums': '앨범', 'search.tracks': '곡', 'search.tracksFirst': '곡 (처음 {n}개)',
  'search.addAll': '{tracks} 모두 추가', 'search.addAllResults': '결과 모두 추가', 'search.allResults': '모든 결과',
  'search.stream': '스트림', 'search.playStream': '이 스트림 재생', 'search.hint': '아티스트, 앨범, 제목으로 음악을 검색하세요.',
  'search.recent': '최근 검색',
  'lib.sections': '보관함 분류', 'lib.artists': '아티스트', 'lib.albums': '앨범', 'lib.playlists': '재생목록',
  'lib.favourites': '즐겨찾기', 'lib.history': '기록', 'lib.radio': '라디오', 'lib.podcasts': '팟캐스트', 'lib.title': '보관함',
  'lib.noArtists': '보관함에 아직 아티스트가 없습니다.', 'lib.noAlbums': '보관함에 아직 앨범이 없습니다.', 'lib.noAlbumsBy': '{name}의 앨범이 없습니다.',
  'lib.addAll': '모두 추가', 'lib.unlike': '{title} 좋아요 취소', 'lib.noFavourites': '아직 즐겨찾기가 없습니다. 지금 재생 중 화면에서 하트를 누르세요.',
  'lib.nothingPlayed': '아직 재생한 곡이 없습니다.',
  'track.playNow': '{title} 지금 재생', 'track.playNext': '{title} 다음에 재생', 'track.add': '{title} 대기열에 추가',
  'pl.import': '가져오기', 'pl.play': '{name} 재생', 'pl.addToQueue': '{name} 대기열에 추가',
  'pl.none': '아직 재생목록이 없습니다. 대기열을 저장하거나 M3U 파일을 가져오세요.', 'pl.new': '새 재생목록',
  'pl.tooLarge': '“{name}”은(는) 너무 커서 보낼 수 없습니다 ({size} KiB, 최대 1 MiB)', 'pl.unreadable': '“{name}”을(를) 읽을 수 없습니다',
  'pl.imported': '“{name}” 가져옴: {tracks}', 'pl.importedMissing': '“{name}” 가져옴: {tracks}, 보관함에서 찾지 못한 항목 {missing}개',
  'pl.imported.default': '가져온 목록', 'pl.playlist': '재생목록', 'pl.gone': '이 재생목록은 더 이상 없습니다.',
  'pl.export': '내보내기', 'pl.removeFrom': '{name}에서 {title} 빼기', 'pl.empty': '이 재생목록은 비어 있습니다.',
  'pl.renameAsk': '“{name}” 이름 바꾸기', 'pl.deleteAsk': '재생목록 “{name}”을(를) 삭제할까요?', 'pl.deleted': '“{name}”을(를) 삭제했습니다',
  'radio.title': '라디오와 URL', 'radio.url': '스트림 URL', 'radio.badURL': 'http:// 또는 https:// 주소를 입력하세요',
  'radio.recent': '최근 스트림', 'radio.play': '{url} 재생', 'radio.add': '{url} 대기열에 추가', 'radio.none': '재생한 스트림이 여기에 나옵니다.',
  'pod.feedURL': '팟캐스트 피드 URL', 'pod.subscribe': '구독', 'pod.badURL': '피드의 http:// 또는 https:// 주소를 입력하세요',
  'pod.subscribed': '“{title}”을(를) 구독했습니다', 'pod.unplayed': '안 들은 에피소드 {n}개', 'pod.none': '아직 팟캐스트가 없습니다. 위에 피드 주소를 붙여 넣어 구독하세요.',
  'pod.of': '{duration} 중 {position}', 'pod.played': '들음', 'pod.listened': '{duration} 중 {position} 들음',
  'pod.resume': '{title} 이어 듣기', 'pod.playEpisode': '{title} 재생', 'pod.markUnplayed': '{title} 안 들음으로 표시', 'pod.markPlayed': '{title} 들음으로 표시',
  'pod.resuming': '“{title}”을(를) {position}부터 이어 듣습니다', 'pod.playing': '“{title}” 재생 중', 'pod.noNew': '새 에피소드가 없습니다',
  'pod.unsubscribeAsk': '“{title}” 구독을 취소할까요?', 'pod.unsubscribe': '구독 취소', 'pod.refresh': '{title} 새로 고침',
  'pod.refreshFailed': '마지막 새로 고침 실패: {error}', 'pod.noEpisodes': '에피소드가 없습니다.',
  'rooms.title': '방', 'rooms.region': '방과 그룹', 'rooms.newGroup': '새 그룹', 'rooms.newGroupWith': '{room} 방으로 새 그룹',
  'rooms.asking': '참여를 요청한 스피커', 'rooms.mayJoin': '{name} 스피커가 참여할 수 있습니다', 'rooms.turnedAway': '{name} 스피커를 거절했습니다',
  'rooms.codeDigits': '코드는 스피커가 보여 주는 여섯 자리 숫자입니다', 'rooms.paired': '{name} 스피커와 페어링했습니다',
  'rooms.wantsToJoin': ' 스피커가 참여하려고 합니다', 'rooms.sendspin': 'Sendspin 플레이어 · ', 'rooms.from': '{address}에서 · 키 {key}',
  'rooms.allow': '허용', 'rooms.allowName': '{name} 허용', 'rooms.deny': '거절', 'rooms.denyName': '{name} 거절',
  'rooms.pairingCode': '페어링 코드', 'rooms.pair': '페어링', 'rooms.waitCodes': ' 스피커가 코드를 기다립니다', 'rooms.waitCode': ' 스피커가 코드를 기다립니다',
  'rooms.typeCode': '스피커가 보여 주는 여섯 자리 숫자를 입력하세요',
  'rooms.partyOn': '파티: 모든 방에서 {name}을(를) 재생합니다', 'rooms.partyOff': '파티 끝: 모든 방이 원래 그룹으로 돌아갔습니다',
  'rooms.party': '파티', 'rooms.partyIsOn': '파티 중', 'rooms.partyTapOff': '누르면 모든 방이 원래 그룹으로 돌아갑니다',
  'rooms.partyEvery': '모든 방에서 {name} 재생', 'rooms.created': '그룹 “{name}”을(를) 만들었습니다',
  'rooms.volumeOf': '{name} 음량', 'rooms.mute': '{name} 음소거', 'rooms.unmute': '{name} 음소거 해제', 'rooms.groupOf': '{name}의 그룹',
  'rooms.latencyOf': '{name}의 지연 보정 (밀리초)', 'rooms.latencyRange': '지연 보정은 −1000에서 5000 ms 사이입니다',
  'rooms.group': '그룹', 'rooms.latency': '지연', 'rooms.lessLatency': '{name} 지연 보정 줄이기',
  'rooms.moreLatency': '{name} 지연 보정 늘리기', 'rooms.ms': 'ms', 'rooms.ownGroup': '자기 그룹 (분리)', 'rooms.newGroupItem': '새 그룹…',
  'rooms.renameAsk': '“{name}” 이름 바꾸기', 'rooms.deleteAsk': '그룹 “{name}”을(를) 삭제할까요? 그룹의 방은 {main}(으)로 돌아갑니다.',
  'rooms.nothingQueued': '대기열 비어 있음', 'rooms.controlling': '제어 중', 'rooms.control': '제어',
  'rooms.noRooms': '아직 방이 없습니다. 방의 그룹 선택에서 이 그룹을 고르세요.', 'rooms.offline': '{name} 스피커가 오프라인입니다',
  'rooms.online': '{name} 스피커가 연결되었습니다', 'rooms.controlGroup': '이 휴대폰으로 {name} 제어',
  'rooms.renameGroup': '{name} 이름 바꾸기', 'rooms.deleteGroup': '{name} 삭제', 'rooms.groupVolume': '그룹 {name} 음량',
  'health.offline': '오프라인', 'health.connected': '연결됨', 'health.ready': '준비됨 · 시계 ±{clock} µs · 왕복 {rtt} µs',
  'health.settling': '맞추는 중 ±{us} µs', 'health.inSync': '동기화됨 ±{us} µs', 'health.off': '{ms} ms 어긋남', 'health.buffer': ' · 버퍼 {ms} ms',
  'sound.title': '사운드', 'sound.room': '방', 'sound.preset': '프리셋', 'sound.preampDb': '프리앰프 (dB)', 'sound.speed': '속도',
  'sound.speedLabel': '재생 속도', 'sound.pitch': '음높이', 'sound.pitchLabel': '음높이 (반음)', 'sound.normal': '보통',
  'sound.savePreset': '프리셋 저장', 'sound.autoPreamp': '자동 프리앰프', 'sound.tempoTitle': '이 그룹의 속도와 음높이',
  'sound.band': '{band} Hz (dB)', 'sound.saveAsk': '이 대역을 프리셋으로 저장', 'sound.saved': '프리셋 “{name}”을(를) 저장했습니다',
  'sound.custom': '사용자 지정', 'sound.semitones': '{n}반음',
  'settings.title': '이 휴대폰', 'settings.language': '언어',
};

export const CATALOGUES = { en: EN, ko: KO };
// Each language's name in itself, for the picker.
export const LANGUAGES = [['en', 'English'], ['ko', '한국어']];
const KEY = 'tutti.lang';

function choose() {
  try {
    const kept = localStorage.getItem(KEY);
    if (kept && CATALOGUES[kept]) return kept;
  } catch (e) { /* private mode: the browser's languages */ }
  const wanted = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en']);
  for (const tag of wanted) {
    const code = String(tag).toLowerCase().split(/[-_]/)[0];
    if (CATALOGUES[code]) return code;
  }
  return 'en';
}

let lang = choose();
document.documentElement.lang = lang;

export function language() { return lang; }

// Keeps the choice on this phone and redraws the page in it.
export function setLanguage(code) {
  if (!CATALOGUES[code] || code === lang) return;
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
  let entry = CATALOGUES[lang][key];
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

// "3 tracks", "3곡": a count with its noun.
export function count(key, n) { return t(key, { n }); }

// The page's date and time words.
export function dateTime(ms, options) { return new Date(ms).toLocaleString(lang, options); }
export function date(ms, options) { return new Date(ms).toLocaleDateString(lang, options); }
export function time(ms, options) { return new Date(ms).toLocaleTimeString(lang, options); }
