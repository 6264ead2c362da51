import Foundation
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// A long recording read as a file is cut at pauses into parts decoded on every core at once:
/// the same words as one pass (the same audio as a stream, which is read in one pass), with
/// progress over the whole file, and another caller's short file is not held up behind it.
/// The class's voiceboxd cuts parts of 10 s (`file-part`; a minute unless set) and so files from
/// 15 s on: recordings of half a minute are cut as an hour's are, into as many parts a core.
/// (How much sooner the parts are done: bench/recognition, section 5.) The tests share it.
final class LongFileRecognitionTests: SharedRecognitionTestCase {
    override class var serviceArguments: [String] { ["--bound", "file-part=10"] }

    /// About 38 s of real speech with pauses (`times` over): librivox's five recordings and three
    /// others, with 0.4 s of silence after each; as raw samples and as a WAV file.
    private func longRecording(times: Int = 1) throws -> (raw: String, wav: String) {
        let librivox = try FileManager.default.contentsOfDirectory(atPath: Recordings.path("librivox"))
            .filter { $0.hasSuffix(".wav") }.sorted()
        var pieces: [Data] = []
        for name in librivox {
            let target = directory.appendingPathComponent(name + ".raw").path
            let result = try runProgram(["sox", Recordings.path("librivox/" + name), "-t", "raw", "-r", "16000", "-e", "signed",
                                         "-b", "16", "-c", "1", target])
            guard result.status == 0 else { throw ProgramError(description: "sox failed: \(result.output)") }
            pieces.append(try Data(contentsOf: URL(fileURLWithPath: target)))
        }
        for name in ["goforward.raw", "numbers.raw", "something.raw"] {
            pieces.append(try Data(contentsOf: URL(fileURLWithPath: Recordings.path(name))))
        }
        let pause = Data(count: 12_800)  // 0.4 s
        var long = Data()
        for _ in 0..<times {
            for piece in pieces { long += piece + pause }
        }
        let raw = directory.appendingPathComponent("long.raw").path
        try long.write(to: URL(fileURLWithPath: raw))
        let wav = directory.appendingPathComponent("long.wav").path
        try Recordings.sox(raw: raw, to: wav)
        return (raw, wav)
    }

    /// What is said in `longRecording()`: the recordings' transcripts, in the same order.
    private func transcript() throws -> String {
        // By id, which is the recording's name: in the order `longRecording` joins them.
        let librivox = try Recordings.transcription("librivox/transcription").sorted { $0.key < $1.key }.map(\.value)
        let once = (librivox + ["go forward ten meters", "thirty three forty six ninety two", "go somewhere and do something"])
            .joined(separator: " ")
        return once
    }

    /// The same audio read in one pass, on one decoder: as a stream (a regular file) with a
    /// `max_seconds` 0.2 s short of its end (inside the last pause), which no part may pass: a
    /// stream is cut into parts only when all of it is within `max_seconds`.
    private func onePass(_ raw: String, _ options: [String: DBusValue] = [:], bytesPerSecond: Double = 32_000) async throws -> Recognized {
        let stream = try FileHandle(forReadingFrom: URL(fileURLWithPath: raw))
        defer { try? stream.close() }
        let seconds = Double(try FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int ?? 0) / bytesPerSecond
        let heard = try await service!.recognize(options.merging(["stream": .unixFD(stream.fileDescriptor),
                                                                  "max_seconds": .double(seconds - 0.2)]) { $1 },
                                                 timeout: .seconds(300))
        XCTAssertEqual(heard.reason, "max_duration")
        return heard
    }

    /// How many decoder workers did a share of the work (a second of CPU and more; one pass of
    /// the long recording is 4-6 s of it).
    private func lanes(_ spent: [pid_t: Double]) -> Int { spent.values.filter { $0 >= 1 }.count }

    /// Words that differ between two transcripts: the edit distance over words.
    private func wordsDiffering(_ first: String, _ second: String) -> Int {
        let a = first.split(separator: " "), b = second.split(separator: " ")
        var row = Array(0...b.count)
        for (index, word) in a.enumerated() {
            var previous = row[0]
            row[0] = index + 1
            for j in stride(from: 1, through: b.count, by: 1) {
                let kept = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (word == b[j - 1] ? 0 : 1))
                previous = kept
            }
        }
        return row[b.count]
    }

    /// The CPU seconds each decoder worker of `daemon` spends while `body` runs (sampled every
    /// 0.2 s: a worker started meanwhile counts from its start).
    private func workerCPU(of daemon: pid_t, during body: () async throws -> Recognized) async throws -> (Recognized, [pid_t: Double]) {
        func cpu(_ pid: pid_t) -> Double? {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ") else { return nil }
            let fields = stat[afterName.upperBound...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
            return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        let seen = Shared<[pid_t: (first: Double, last: Double)]>([:])
        let sampling = Task {
            while !Task.isCancelled {
                for pid in ServiceProcesses.decoderWorkers(of: daemon) {
                    guard let now = cpu(pid) else { continue }
                    seen.withLock { $0[pid] = ($0[pid]?.first ?? now, now) }
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        let result = try await body()
        sampling.cancel()
        _ = await sampling.value
        return (result, seen.value.mapValues { $0.last - $0.first })
    }

    func testALongFileDecodesInPartsOnEveryCoreWithTheSameWords() async throws {
        let service = self.service!
        let (raw, wav) = try longRecording()
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // the model loaded

        let onePass = try await self.onePass(raw)

        let (inParts, spent) = try await workerCPU(of: service.daemon.pid) {
            try await service.recognize(["file": .string(wav), "partial_results": .boolean(true)], timeout: .seconds(300))
        }
        XCTAssertEqual(inParts.reason, "end_of_file")
        // On every core: as many decoder workers each did a share of the work (a second of CPU
        // and more; one pass is 4-6 s of it), where one pass keeps one busy.
        print("METRIC long file in parts: decoder workers' CPU seconds \(spent.values.sorted(by: >))")
        XCTAssertGreaterThanOrEqual(lanes(spent), min(2, ProcessInfo.processInfo.activeProcessorCount), "workers CPU: \(spent)")
        XCTAssertEqual(inParts.duration, onePass.duration + 0.2, accuracy: 0.01)
        let differing = wordsDiffering(onePass.text, inParts.text)
        let words = onePass.text.split(separator: " ").count
        print("METRIC long file (\(Int(inParts.duration)) s in parts of 10 s): \(differing) of \(words) words differ from one pass")
        XCTAssertGreaterThan(words, 60)
        // Each part's decoder hears the file up to its part without searching, so it meets its
        // part as one pass would: the same words (the bound is 1 %; measured: none differ).
        XCTAssertLessThanOrEqual(Double(differing), Double(words) * 0.01, "parts: \(inParts.text)\none pass: \(onePass.text)")
        let reference = try transcript()
        let onePassErrors = wordsDiffering(reference, onePass.text), inPartsErrors = wordsDiffering(reference, inParts.text)
        let referenceWords = reference.split(separator: " ").count
        print("METRIC long file word errors against the transcript: one pass \(onePassErrors), in parts \(inPartsErrors) "
              + "of \(referenceWords)")
        XCTAssertLessThanOrEqual(inPartsErrors, onePassErrors + referenceWords / 100, "parts: \(inParts.text)")
        // Word times run over the whole file, in order.
        let times = inParts.words.map(\.start)
        XCTAssertEqual(times, times.sorted())
        XCTAssertGreaterThan(times.last ?? 0, inParts.duration - 5)
        // Progress covers the whole file: rising, to 1.
        let progress = service.recognitionSignals(of: inParts.id).filter { $0.member == "RecognitionProgress" }
            .compactMap { $0.arguments.dropFirst().first?.double }
        XCTAssertGreaterThan(progress.count, 3)
        XCTAssertEqual(progress, progress.sorted())
        XCTAssertEqual(progress.last, 1)
        // Partials cover the whole file, also the part the other core was still decoding when
        // this recognition's own core had finished its part.
        let lastPartial = service.recognitionSignals(of: inParts.id).last { $0.member == "RecognitionPartial" }?
            .arguments.dropFirst().first?.string ?? ""
        XCTAssertGreaterThanOrEqual(lastPartial.split(separator: " ").count * 10, inParts.words.count * 9, lastPartial)
    }

    /// A stream that comes far faster than real time and ends is decoded as the same audio in a
    /// file is: in parts on every core, with the file's words and times, but without
    /// RecognitionProgress (files only). So whether it is piped in as fast as it goes, a regular
    /// file (`voicebox listen --stdin < talk.raw`) or converted (f32le, 48 kHz, stereo). One whose
    /// `max_seconds` ends before it does is read in one pass, on one core.
    func testAStreamThatComesFastDecodesInPartsAsTheFileDoes() async throws {
        let service = self.service!
        let (raw, wav) = try longRecording()
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // the model loaded
        let file = try await service.recognize(["file": .string(wav)], timeout: .seconds(300))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: raw)))
        let converted = directory.appendingPathComponent("long-f32-48k-stereo.raw").path
        let sox = try runProgram(["sox", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", raw,
                                  "-t", "raw", "-r", "48000", "-e", "float", "-b", "32", "-c", "2", converted])
        XCTAssertEqual(sox.status, 0, sox.output)
        let regular = try FileHandle(forReadingFrom: URL(fileURLWithPath: raw))
        defer { try? regular.close() }
        let f32: [String: DBusValue] = ["stream_format": .string("f32le"), "stream_rate": .uint32(48_000), "stream_channels": .uint32(2)]
        // Converted there and back, the audio is not quite the file's: its reference is its own one pass.
        let convertedOnePass = try await onePass(converted, f32, bytesPerSecond: 48_000 * 2 * 4)
        let piped = try PipeWriter(bytes), pipedConverted = try PipeWriter(Array(try Data(contentsOf: URL(fileURLWithPath: converted))))
        let cases: [(String, [String: DBusValue], reference: Recognized)] = [
            ("piped", ["stream": .unixFD(piped.readEnd)], file),
            ("a regular file", ["stream": .unixFD(regular.fileDescriptor)], file),
            ("converted", f32.merging(["stream": .unixFD(pipedConverted.readEnd)]) { $1 }, convertedOnePass),
        ]
        for (name, options, reference) in cases {
            var options = options
            options["partial_results"] = .boolean(true)
            let (heard, spent) = try await workerCPU(of: service.daemon.pid) {
                try await service.recognize(options, timeout: .seconds(300))
            }
            print("METRIC fast stream (\(name)) in parts: decoder workers' CPU seconds \(spent.values.sorted(by: >)); "
                  + "\(wordsDiffering(reference.text, heard.text)) of \(reference.words.count) words differ from its reference")
            XCTAssertEqual(heard.reason, "end_of_file", name)
            XCTAssertGreaterThanOrEqual(lanes(spent), min(2, ProcessInfo.processInfo.activeProcessorCount), "\(name): \(spent)")
            XCTAssertEqual(heard.duration, reference.duration + (reference.reason == "max_duration" ? 0.2 : 0), accuracy: 0.01, name)
            // The same samples, cut at the same pauses: the same words, at the same times.
            XCTAssertEqual(heard.text, reference.text, name)
            XCTAssertEqual(heard.words.map(\.start), reference.words.map(\.start), name)
            let signals = service.recognitionSignals(of: heard.id)
            XCTAssertFalse(signals.contains { $0.member == "RecognitionProgress" }, name)
            let lastPartial = signals.last { $0.member == "RecognitionPartial" }?.arguments.dropFirst().first?.string
            XCTAssertEqual(lastPartial, heard.text, name)
        }
        piped.closeReadEnd()
        pipedConverted.closeReadEnd()

        // Not all of it within max_seconds: one pass, on one core.
        let (limited, spent) = try await workerCPU(of: service.daemon.pid) { try await self.onePass(raw) }
        XCTAssertEqual(lanes(spent), 1, "one pass: \(spent)")
        XCTAssertEqual(limited.text, file.text, "the same words, but for the last 0.2 s of silence")
    }

    /// A fast stream is decoded from its first sample as it comes, its partials too, whether or
    /// not its rest goes to parts later: a stop soon after it began answers with what was heard
    /// by then, as a file's does.
    func testAFastStreamStoppedEarlyAnswersWithWhatWasHeard() async throws {
        let service = self.service!
        let (raw, _) = try longRecording(times: 3)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // the model loaded
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: raw)))
        let writer = try PipeWriter(bytes)
        let known = service.startedRecognitions
        let running = Task {
            try await service.recognize(["stream": .unixFD(writer.readEnd), "partial_results": .boolean(true)], timeout: .seconds(300))
        }
        let id = try await service.waitForNewRecognition(besides: known)
        try await waitUntil("a partial", timeout: .seconds(120)) {
            service.recognitionSignals(of: id).contains { $0.member == "RecognitionPartial" }
        }
        try await ServiceHarness.call("StopRecognition", on: service.client)
        let stopped = try await running.value
        writer.closeReadEnd()
        XCTAssertEqual(stopped.reason, "stopped")
        XCTAssertFalse(stopped.text.isEmpty, "nothing heard before the stop")
        XCTAssertGreaterThan(stopped.duration, 0)
        XCTAssertLessThan(stopped.duration, Double(bytes.count / 2) / 16_000 - 1)
    }

    /// While a long file decodes in parts on every core, another caller's short file is answered
    /// before it ends (a part gives its turn back at its next pause); and a stop ends every part
    /// at once with what was heard from the start.
    func testAnotherCallersFileIsNotHeldUpBehindALongFilesParts() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let (_, wav) = try longRecording(times: 3)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let known = service.startedRecognitions
        let long = Task { try await service.recognize(["file": .string(wav)], timeout: .seconds(300)) }
        let longID = try await service.waitForNewRecognition(besides: known)
        // Its parts decoding on every core: once the file is read and cut (seconds under the thread
        // sanitizer), some of it decoded on every core.
        try await waitUntil("the long file's parts to decode", timeout: .seconds(300)) {
            service.recognitionSignals(of: longID).contains {
                $0.member == "RecognitionProgress" && ($0.arguments.dropFirst().first?.double ?? 0) > 0.05
            }
        }

        let other = try BusConnection(address: stack.busAddress)
        let short = try await ServiceHarness.recognize(on: other, ["file": .string(Recordings.path("goforward.raw"))],
                                                       timeout: .seconds(300))
        XCTAssertEqual(short.text, "go forward ten meters")
        XCTAssertFalse(service.recognitionSignals(of: longID).contains { $0.member == "RecognitionFinished" },
                       "the long file had ended before the other caller's: the test proves nothing")

        try await ServiceHarness.call("StopRecognition", on: service.client)
        let stopped = try await long.value
        XCTAssertEqual(stopped.reason, "stopped")
        XCTAssertLessThan(stopped.duration, 100)
        XCTAssertTrue(stopped.text.hasPrefix("and"), stopped.text)
        // Progress never goes back, though the stop keeps less than both cores decoded.
        let progress = service.recognitionSignals(of: longID).filter { $0.member == "RecognitionProgress" }
            .compactMap { $0.arguments.dropFirst().first?.double }
        XCTAssertEqual(progress, progress.sorted())
        await other.close()
    }

    /// Word times are the file's in every part, also in a part a lane takes after another one
    /// (its decoder's own clock then runs from the first part's start). About a minute of three
    /// short recordings with 3 s of silence after each, three times over: on 2 cores it is cut into
    /// 6 parts, 3 to a lane, and every repeat's words come one period after the repeat before's.
    func testWordTimesAreTheFilesInEveryPart() async throws {
        let service = self.service!
        var clips = Data()
        for name in ["goforward.raw", "numbers.raw", "something.raw"] {
            clips += try Data(contentsOf: URL(fileURLWithPath: Recordings.path(name))) + Data(count: 3 * 32_000)
        }
        let sparse = clips + clips + clips
        let raw = directory.appendingPathComponent("sparse.raw").path
        try sparse.write(to: URL(fileURLWithPath: raw))
        let wav = directory.appendingPathComponent("sparse.wav").path
        try Recordings.sox(raw: raw, to: wav)
        let period = Double(clips.count / 2) / 16_000

        let heard = try await service.recognize(["file": .string(wav)], timeout: .seconds(300))
        XCTAssertEqual(heard.reason, "end_of_file")
        let firstRepeat = heard.words.filter { $0.start < period }
        XCTAssertGreaterThanOrEqual(firstRepeat.count, 10, heard.text)
        XCTAssertGreaterThanOrEqual(heard.words.count, firstRepeat.count * 3 - 2, heard.text)
        var misplaced: [String] = []
        for word in heard.words {
            let repeatIndex = (word.start / period).rounded(.down)
            let inRepeat = word.start - repeatIndex * period
            if !firstRepeat.contains(where: { $0.word == word.word && abs($0.start - inRepeat) < 0.1 }) {
                misplaced.append("\(word.word) at \(word.start) s")
            }
        }
        XCTAssertLessThanOrEqual(misplaced.count, 2, "words not where the same word is in the first repeat: \(misplaced)")
        XCTAssertLessThan(heard.words.last?.start ?? .infinity, heard.duration)
    }

    /// An utterance whose first word the detector places just before the place where a part's
    /// decoding begins (its lead, 0.2 s) is kept, and the parts give one pass's words. The five
    /// card recordings with 0.4 s pauses, three times over (35 s, 4 parts, cut in those pauses):
    /// "seven of clubs" was lost at a part's start (191 words against 188, in 105 s of them).
    func testAnUtteranceBeginningAtAPartsStartIsKept() async throws {
        let service = self.service!
        var once = Data()
        for index in 1...5 {
            let target = directory.appendingPathComponent("card\(index).raw").path
            let result = try runProgram(["sox", Recordings.path("cards/00\(index).wav"), "-t", "raw", "-r", "16000", "-e", "signed",
                                         "-b", "16", "-c", "1", target])
            guard result.status == 0 else { throw ProgramError(description: "sox failed: \(result.output)") }
            once += try Data(contentsOf: URL(fileURLWithPath: target)) + Data(count: 12_800)
        }
        let raw = directory.appendingPathComponent("cards.raw").path
        try Data((0..<3).flatMap { _ in once }).write(to: URL(fileURLWithPath: raw))
        let wav = directory.appendingPathComponent("cards.wav").path
        try Recordings.sox(raw: raw, to: wav)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // the model loaded

        let onePass = try await self.onePass(raw)
        let inParts = try await service.recognize(["file": .string(wav)], timeout: .seconds(300))
        XCTAssertEqual(inParts.reason, "end_of_file")
        XCTAssertEqual(inParts.duration, onePass.duration + 0.2, accuracy: 0.01)
        print("METRIC cards (\(Int(inParts.duration)) s): \(wordsDiffering(onePass.text, inParts.text)) of "
              + "\(onePass.words.count) words differ from one pass")
        XCTAssertEqual(inParts.text, onePass.text)
        XCTAssertEqual(inParts.words.map(\.start), onePass.words.map(\.start))
    }
}
