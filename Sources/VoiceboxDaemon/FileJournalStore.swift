import Foundation
import VoiceboxCore

/// The interruption journal as a file, `$XDG_RUNTIME_DIR/voicebox/interruption.json`: per user,
/// gone at logout, like what it describes. Written whole to a temporary file and renamed, so a
/// crash mid-write leaves the previous journal, never half of one.
struct FileJournalStore: JournalStore {
    let path: String

    static func `default`() -> FileJournalStore {
        let environment = ProcessInfo.processInfo.environment
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        return FileJournalStore(path: runtime + "/voicebox/interruption.json")
    }

    func save(_ journal: InterruptionJournal) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let data = try JSONEncoder().encode(journal)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    func load() -> InterruptionJournal? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(InterruptionJournal.self, from: data)
    }

    func clear() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
