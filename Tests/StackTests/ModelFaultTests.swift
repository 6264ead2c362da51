import Foundation
import Glibc
@testable import TestSupport
import VoiceboxContract
import VoiceboxSpawn
import VoiceboxBus
import XCTest

/// Faults in the recognition models, against the real stack: a user's model file cut short, a
/// user's model directories removed while the service runs. Files only: no sound server has a part
/// (the other faults: SoundServerTests' FaultTests).
final class ModelFaultTests: XCTestCase {
    /// A user's model for `language` under `data` (an XDG_DATA_HOME) made of Debian's en-US files:
    /// links, or a copy of the acoustic model when a test is to damage it. Returns its directory.
    static func userModel(_ language: String, in data: URL, copyingAcoustic: Bool) throws -> URL {
        let debian = "/usr/share/pocketsphinx/model/en-us"
        let model = data.appendingPathComponent("voicebox/models/" + language)
        let manager = FileManager.default
        try manager.createDirectory(at: model, withIntermediateDirectories: true)
        if copyingAcoustic {
            try manager.copyItem(atPath: debian + "/en-us", toPath: model.path + "/acoustic")
        } else {
            try manager.createSymbolicLink(atPath: model.path + "/acoustic", withDestinationPath: debian + "/en-us")
        }
        for name in ["en-us.lm.bin", "cmudict-en-us.dict"] {
            try manager.createSymbolicLink(atPath: model.path + "/" + name, withDestinationPath: debian + "/" + name)
        }
        return model
    }

    /// A user's en-US model (which beats Debian's) with a file cut short, as an interrupted copy
    /// leaves it: Recognize fails with EngineUnavailable naming the model, quickly; the service
    /// stays up and speaks; once the file is whole again Recognize works, without a restart.
    /// pocketsphinx crashes (mdef: SIGSEGV) or exits (transition_matrices: E_FATAL) on these, so
    /// voiceboxd has a throw-away process load a model first (ModelProbe).
    func testATruncatedModelFileFailsRecognitionNotTheService() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let data = try makeTemporaryDirectory(self)
        let model = try Self.userModel("en-US", in: data, copyingAcoustic: true)
        // Models unloaded 0.3 s after use: each damaged file below is loaded afresh, not found warm.
        let service = try await startService(on: stack, environment: ["XDG_DATA_HOME": data.path], extraArguments: ["--bound", "model-idle=0.3"])
        let goforward: [String: DBusValue] = ["file": .string(Recordings.path("goforward.raw"))]

        for (file, says) in [("mdef", "crashed"), ("transition_matrices", "transition matrix")] {
            try await waitUntil("no decoder worker to be warm") { ServiceProcesses.decoderWorkers(of: service.daemon.pid).isEmpty }
            let path = model.path + "/acoustic/" + file
            let whole = try Data(contentsOf: URL(fileURLWithPath: path))
            try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
            let asked = ContinuousClock.now
            let error = await service.recognitionError(goforward)
            XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", "\(file): \(error?.message ?? "no error")")
            XCTAssert(error?.message.contains(says) == true, "\(file): \(error?.message ?? "")")
            XCTAssert(error?.message.contains(model.path) == true, "the error names the model: \(error?.message ?? "")")
            _ = faultMetric("\(file) cut in half → Recognize fails", since: asked)
            XCTAssertNil(service.daemon.poll(), "voiceboxd must not die of a damaged model")
            let spoken = try await service.speak("still speaking")
            let end = try await service.waitForFinish(spoken)
            XCTAssertEqual(end, "done")

            try whole.write(to: URL(fileURLWithPath: path))
            let mended = ContinuousClock.now
            let recognized = try await service.recognize(goforward)
            XCTAssertEqual(recognized.text, "go forward ten meters")
            _ = faultMetric("\(file) whole again → Recognize works (first load of the model)", since: mended)
        }
    }

    /// A microphone recognition opens the microphone while its model loads, but not for a model
    /// that failed to load last time: a damaged model fails every attempt, and would pause others
    /// and show the recording indicator for nothing each time. The first attempt, which could not
    /// know, started (and ended) a recognition; the next fails without one.
    func testADamagedModelOpensTheMicrophoneOnlyOnce() async throws {
        let stack = try Stack.require()
        let data = try makeTemporaryDirectory(self)
        let model = try Self.userModel("en-US", in: data, copyingAcoustic: true)
        let means = model.path + "/acoustic/means"
        let whole = try Data(contentsOf: URL(fileURLWithPath: means))
        try whole.prefix(1000).write(to: URL(fileURLWithPath: means))
        let service = try await startService(on: stack, environment: ["XDG_DATA_HOME": data.path])
        let first = await service.recognitionError(["max_seconds": .double(5)])
        XCTAssertEqual(first?.name, "org.voicebox.Error.EngineUnavailable", first?.message ?? "no error")
        XCTAssertEqual(service.startedRecognitions.count, 1, "the first attempt listened while the model loaded")
        let again = await service.recognitionError(["max_seconds": .double(5)])
        XCTAssertEqual(again?.name, "org.voicebox.Error.EngineUnavailable", again?.message ?? "no error")
        XCTAssertEqual(service.startedRecognitions.count, 1, "the model that failed is loaded first: no recognition started")
        let listening = try await service.property("Listening")
        XCTAssertEqual(listening?.bool, false)
    }

    /// A user's model directories removed while the service runs: a language only they had
    /// (here fr-FR, English files under that name) fails with UnsupportedLanguage at once, and
    /// en-GB falls back to Debian's en-US.
    func testAModelDirectoryRemovedFailsItsLanguageByName() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let data = try makeTemporaryDirectory(self)
        let models = data.appendingPathComponent("voicebox/models")
        for language in ["en-GB", "en-US", "fr-FR"] { _ = try Self.userModel(language, in: data, copyingAcoustic: false) }
        let service = try await startService(on: stack, environment: ["XDG_DATA_HOME": data.path])
        let british: [String: DBusValue] = ["file": .string(Recordings.path("goforward.raw")), "language": .string("en-GB")]
        let before = try await service.recognize(british)
        XCTAssertEqual(before.language, "en-GB")
        let french: [String: DBusValue] = ["file": .string(Recordings.path("goforward.raw")), "language": .string("fr-FR")]
        let frenchBefore = try await service.recognize(french)
        XCTAssertEqual(frenchBefore.language, "fr-FR")

        try FileManager.default.removeItem(at: models)
        let asked = ContinuousClock.now
        // en-GB now falls back to another English model: Debian's en-US.
        let fallback = try await service.recognize(british)
        XCTAssertEqual(fallback.language, "en-US")
        XCTAssertEqual(fallback.text, "go forward ten meters")
        let error = await service.recognitionError(french)
        XCTAssertEqual(error?.name, "org.voicebox.Error.UnsupportedLanguage", error?.message ?? "no error")
        _ = faultMetric("model directory removed → Recognize answers (fallback, then UnsupportedLanguage)", since: asked)
        // (RecognitionLanguages is read at start and still lists en-GB: a restart refreshes it.)
    }
}
