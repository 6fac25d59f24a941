// The music library: SQLite store, scanner, search, playlists (issue 4).
import TuttiCore
