import Foundation
@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxCore
import VoiceboxSndfile

/// Times against pocketsphinx_continuous on the same files, and the same words as it prints.
/// Numbers go to the test log as "PERF ..." lines.
final class PerformanceTests: XCTestCase {
    private static let tool = "/usr/bin/pocketsphinx_continuous"

    override func setUp() async throws {
        try TestData.requireModel()
    }

    /// A model's load (what a decoder worker's start waits for), and a recognition's decoder on a
    /// loaded one (what a warm worker does for each recognition).
    func testModelLoadTimes() async throws {
        var kept: [LoadedModel] = []
        for (name, configuration) in [("with language model", RecognitionConfiguration()),
                                      ("grammar only", RecognitionConfiguration(hint: .confirmation))] {
            var times: [Double] = []
            var model: LoadedModel?
            for _ in 0..<3 {
                model = nil  // freed before the next load: one of each kind is left
                let start = ContinuousClock.now
                model = try TestData.engine.loadModel(for: configuration)
                times.append(seconds(ContinuousClock.now - start))
            }
            let warm = ContinuousClock.now
            _ = try model?.decoder(for: configuration)
            kept += model.map { [$0] } ?? []
            print(String(format: "PERF model load (%@): %.3f s median of %@; decoder on a loaded model %.4f s",
                         name, times.sorted()[1], times.map { String(format: "%.3f", $0) }.joined(separator: "/"),
                         seconds(ContinuousClock.now - warm)))
        }
        withExtendedLifetime(kept) {
            print("PERF resident memory with one model of each kind loaded: \(residentBytes() / 1_000_000) MB")
        }
    }

    /// Dictation over every recording without a grammar: our words are the tool's, file by file.
    func testDecodingAgainstPocketsphinxContinuous() async throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.tool), "pocketsphinx_continuous is not installed")
        let librivox = try FileManager.default.contentsOfDirectory(atPath: Recordings.path("librivox"))
            .filter { $0.hasSuffix(".wav") }.sorted().map { "librivox/" + $0 }
        let files = ["goforward.raw", "numbers.raw", "something.raw"] + librivox
        let model = try TestData.engine.loadModel(for: .init())
        // CPU seconds as well as wall-clock ones: the machine may be busy with other work.
        var ours = (wall: 0.0, cpu: 0.0), theirs = (wall: 0.0, cpu: 0.0), audio = 0.0
        for name in files {
            let (start, cpuStart) = (ContinuousClock.now, cpuSeconds(RUSAGE_SELF))
            let file = try await FileReading.read(try AudioFileReader(path: Recordings.path(name)), through: try model.decoder(for: .init()))
            let ourTime = (wall: seconds(ContinuousClock.now - start), cpu: cpuSeconds(RUSAGE_SELF) - cpuStart)
            let (toolStart, toolCPUStart) = (ContinuousClock.now, cpuSeconds(RUSAGE_CHILDREN))
            let printed = try XCTUnwrap(programOutput(Self.tool, ["-infile", Recordings.path(name), "-logfn", "/dev/null"]))
            let toolTime = (wall: seconds(ContinuousClock.now - toolStart), cpu: cpuSeconds(RUSAGE_CHILDREN) - toolCPUStart)
            let toolText = printed.split(whereSeparator: \.isNewline).joined(separator: " ")
            XCTAssertEqual(file.result.text, toolText, name)
            ours.wall += ourTime.wall; ours.cpu += ourTime.cpu
            theirs.wall += toolTime.wall; theirs.cpu += toolTime.cpu
            audio += file.seconds
            print(String(format: "PERF %@: %.2f s audio; ours %.3f s wall, %.3f s CPU (RTF %.3f); pocketsphinx_continuous %.3f s wall, %.3f s CPU incl. load",
                         name, file.seconds, ourTime.wall, ourTime.cpu, ourTime.cpu / file.seconds, toolTime.wall, toolTime.cpu))
        }
        print(String(format: "PERF total: %.1f s audio; ours (model warm) %.2f s wall, %.2f s CPU, RTF %.3f; pocketsphinx_continuous (loads each time) %.2f s wall, %.2f s CPU, RTF %.3f",
                     audio, ours.wall, ours.cpu, ours.cpu / audio, theirs.wall, theirs.cpu, theirs.cpu / audio))
    }

    private func cpuSeconds(_ who: __rusage_who) -> Double {  // self or children
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
