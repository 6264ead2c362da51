import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads
import XCTest

/// The Spiel provider's behaviour over a scripted renderer: which voices are offered, what
/// Synthesize checks and asks for, and a caller that leaves taking its renderings with it.
final class SynthesisServiceTests: XCTestCase {
    static let voices = ScriptedSynthesizer.englishVoices + [
        Voice(id: "generic/Festival", name: "Festival", language: "en", variant: "none", engine: "generic"),
        Voice(id: "quiet/Mute", name: "Mute", language: "de-DE", variant: "none", engine: "quiet"),
    ]
    static let quiet = RenderEngine(name: "quiet", sampleRate: 16000, channels: 1, reportsMarks: false, features: 0)

    var renderer: ScriptedRenderer!
    var bus: RecordingBus!
    var service: SynthesisService!
    let published = Locked<[[ProviderVoice]]>([])

    override func setUp() async throws {
        renderer = ScriptedRenderer(engines: [ScriptedRenderer.espeak, Self.quiet])
        bus = RecordingBus()
        let voices = Self.voices
        service = SynthesisService(voices: VoiceCache(lister: { voices }), renderer: renderer, queue: RenderQueue(renderer: renderer),
                                   bus: bus)
        let published = published
        await service.start { offered in published.withLock { $0.append(offered.list) } }
        await service.waitForVoices(atMost: .seconds(10))
    }

    func testEveryVoiceWhoseEngineRendersIsOfferedWithItsFormat() throws {
        let list = try XCTUnwrap(published.withLock { $0.last })
        XCTAssertEqual(list.map(\.id).sorted(), ["espeak-ng/English (America)", "espeak-ng/English (Great Britain)", "quiet/Mute"])
        XCTAssertEqual(list.first { $0.id == "espeak-ng/English (America)" },
                       ProviderVoice(name: "English (America)", id: "espeak-ng/English (America)",
                                     outputFormat: "audio/x-spiel,format=S16LE,channels=1,rate=22050", features: 0xB, languages: ["en-us", "en"]))
        XCTAssertEqual(list.first { $0.id == "quiet/Mute" }?.outputFormat, "audio/x-raw,format=S16LE,channels=1,rate=16000")
    }

    func synthesize(_ text: String = "Hello.", voice: String = "espeak-ng/English (Great Britain)", pitch: Double = 1, rate: Double = 1,
                    ssml: Bool = false, language: String = "", fd: Int32? = nil, caller: String = ":1.5") async throws(VoiceboxError) {
        let pipe = TestPipe()
        defer { pipe.close() }
        try await service.synthesize(caller: caller, fd: fd ?? pipe.write, text: text, voiceID: voice, pitch: pitch, rate: rate, ssml: ssml,
                                     language: language)
    }

    func testWhatSynthesizeAsksTheRendererFor() async throws {
        try await synthesize("Hi <mark name=\"m\"/>there", pitch: 1.5, rate: 2, ssml: true)
        try await synthesize(voice: "quiet/Mute")
        try await synthesize(voice: "", language: "en-US")
        try await synthesize(voice: "")
        let requests = renderer.started.map(\.request)
        XCTAssertEqual(requests[0].engine, "espeak-ng")
        XCTAssertEqual(requests[0].voiceName, "English (Great Britain)")
        XCTAssertEqual(requests[0].language, "en-GB")
        XCTAssertEqual(requests[0].rate, 2)
        XCTAssertEqual(requests[0].pitch, 50)
        XCTAssertEqual(requests[0].markup.marks[1], .caller(name: "m", at: 3))
        XCTAssertEqual(renderer.started.map(\.target.encoding), [.spiel, .raw, .spiel, .spiel])
        XCTAssertEqual(requests[2].voiceName, "English (America)")
        XCTAssertNil(requests[3].voiceName, "no voice, no language: speech-dispatcher's default")
        XCTAssertEqual(requests[3].language, "en")
    }

    func testEverythingIsCheckedBeforeAnythingIsRendered() async throws {
        let file = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(file) }
        let readEnd = TestPipe()
        defer { readEnd.close() }
        let cases: [(VoiceboxError.Kind, () async throws(VoiceboxError) -> Void)] = [
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(pitch: 2.1) }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(rate: 0.05) }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(rate: .nan) }),
            (.tooLarge, { () async throws(VoiceboxError) in try await self.synthesize(String(repeating: "a", count: 65_537)) }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize("<speak><audio src=\"x\"/></speak>", ssml: true) }),
            (.unknownVoice, { () async throws(VoiceboxError) in try await self.synthesize(voice: "generic/Festival") }),
            (.unsupportedLanguage, { () async throws(VoiceboxError) in try await self.synthesize(voice: "", language: "fr") }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(language: "english!") }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(fd: file) }),
            (.invalidArgument, { () async throws(VoiceboxError) in try await self.synthesize(fd: readEnd.read) }),
        ]
        for (index, (kind, call)) in cases.enumerated() {
            do {
                try await call()
                XCTFail("case \(index) was accepted")
            } catch {
                XCTAssertEqual(error.kind, kind, "case \(index): \(error)")
            }
        }
        XCTAssertTrue(renderer.started.isEmpty)
    }

    func testACallerThatLeavesTakesItsRenderingsWithIt() async throws {
        try await synthesize(caller: ":1.7")
        try await synthesize(caller: ":1.8")
        XCTAssertEqual(bus.watchedCallers, [":1.7", ":1.8"])
        bus.vanish(":1.7")
        let renderer = renderer!
        try await settle("the leaver's rendering to end") { renderer.started[0].target.descriptor.fd == -1 }
        XCTAssertNotEqual(renderer.started[1].target.descriptor.fd, -1, "another caller's goes on")
        renderer.end(2)
        let bus = bus!
        try await settle("its watch to go") { bus.watchedCallers.isEmpty }
    }
}
