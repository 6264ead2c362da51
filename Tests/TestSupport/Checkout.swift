import Foundation

/// Where the tests find the repository and the programs built from it.
public enum Checkout {
    /// The repository's top directory (this file is Tests/TestSupport/Checkout.swift).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A file or directory in the repository, by its path from the top.
    public static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// Where `swift build` put voiceboxd, voicebox and the workers: `$VOICEBOX_BUILD_DIR` (scripts/test
    /// sets it, for the sanitizer builds too), else the debug build of this checkout.
    public static var buildDirectory: String {
        ProcessInfo.processInfo.environment["VOICEBOX_BUILD_DIR"] ?? path(".build/debug")
    }
}
