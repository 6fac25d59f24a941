// Network sources: HTTP(S) streams and files, Icecast/SHOUTcast ICY metadata, offline cache (issue 4).
import TuttiAudio
import TuttiCore
