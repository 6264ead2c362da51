import Glibc
import VoiceboxContract
import VoiceboxCore

/// The interruption journal as a file, `$XDG_RUNTIME_DIR/voicebox/interruption.json`: per user,
/// gone at logout, like what it describes. Written whole to a temporary file and renamed, so a
/// crash mid-write leaves the previous journal, never half of one.
struct FileJournalStore: JournalStore {
    let path: String

    static func `default`() -> FileJournalStore {
        let runtime = ProcessEnvironment.value("XDG_RUNTIME_DIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return FileJournalStore(path: runtime + "/voicebox/interruption.json")
    }

    func save(_ journal: InterruptionJournal) throws {
        try FileSystem.createDirectories(FileSystem.directory(of: path), mode: 0o700)
        try FileSystem.replace(path, with: try JSON.encode(journal))
    }

    func load() -> InterruptionJournal? {
        guard let bytes = FileSystem.contents(atPath: path) else { return nil }
        return try? JSON.decode(InterruptionJournal.self, from: bytes)
    }

    func clear() {
        FileSystem.remove(path)
    }
}
