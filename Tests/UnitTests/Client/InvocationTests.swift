@testable import TestSupport
import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxInsertion
import XCTest
@testable import voicebox

/// The command line as parsed, without a bus.
final class InvocationTests: XCTestCase {
    private func parse(_ arguments: String...) throws -> Invocation {
        try Invocation.parse(arguments)
    }

    private func usageError(_ arguments: String...) -> String? {
        do {
            _ = try Invocation.parse(arguments)
            return nil
        } catch {
            return error.description
        }
    }

    func testSay() throws {
        let invocation = try parse("--address", "unix:path=/b", "say", "--language", "en-GB", "--rate=1.5", "Hello", "there")
        XCTAssertEqual(invocation.address, "unix:path=/b")
        var expected = SayRequest()
        expected.text = "Hello there"
        expected.language = "en-GB"
        expected.rate = 1.5
        XCTAssertEqual(invocation.command, .say(expected))
        XCTAssertEqual(expected.options["wait"], .boolean(true))
        XCTAssertEqual(expected.options["rate"], .double(1.5))
        guard case .say(let negative) = try parse("say", "--no-wait", "--json", "--", "-1", "--is", "text").command else {
            return XCTFail("not say")
        }
        XCTAssertEqual(negative.text, "-1 --is text")
        XCTAssertFalse(negative.wait)
        XCTAssertTrue(negative.json)
    }

    func testBadArgumentsNameTheArgument() {
        XCTAssertEqual(usageError("say", "--rate", "fast", "hi"), "--rate takes a number, not 'fast'")
        XCTAssertEqual(usageError("say", "--rate"), "--rate needs a value")
        XCTAssertEqual(usageError("say"), "say needs some text")
        XCTAssertEqual(usageError("say", "--loud", "hi"), "unknown option '--loud' for say")
        XCTAssertEqual(usageError("say", "--output", "-", "--json", "hi"),
                       "--output - writes the audio to standard output: not with --json or --no-wait")
        XCTAssertEqual(usageError("frobnicate"), "unknown command 'frobnicate'")
        XCTAssertEqual(usageError(), "no command given")
        XCTAssertEqual(usageError("stop", "seven"), "stop takes an utterance id (a positive number), not 'seven'")
        XCTAssertEqual(usageError("stop", "7", "--all"), "stop takes an utterance id or --all, not both")
        XCTAssertEqual(usageError("listen", "--max-seconds", "0"), "--max-seconds takes a number from 0.1 to 86400, not '0'")
        XCTAssertEqual(usageError("listen", "--grammar", "g.gram", "--keyphrase", "hello"),
                       "--grammar and --keyphrase cannot be used together")
        XCTAssertEqual(usageError("listen", "extra"), "unexpected argument 'extra' for listen")
        XCTAssertEqual(usageError("dictate", "--toggle", "--cancel"), "--toggle and --cancel cannot be used together")
        XCTAssertEqual(usageError("dictate", "--output", "xdotool"), "--output takes type, paste, clipboard or stdout, not 'xdotool'")
        XCTAssertEqual(usageError("dictate", "--typer", "xte"), "--typer takes xdotool, wtype, ydotool or ibus, not 'xte'")
        XCTAssertEqual(usageError("insert"), "insert needs some text")
        XCTAssertEqual(usageError("insert", "--output", "stdout", "x"), "--output takes type, paste or clipboard, not 'stdout'")
        XCTAssertEqual(usageError("status", "now"), "unexpected argument 'now' for status")
        XCTAssertEqual(usageError("say", "--priority", "urgent", "x"),
                       "--priority takes message, important, text, notification, progress, not 'urgent'")
        XCTAssertEqual(usageError("--verbose", "status"), "unknown option '--verbose'")
    }

    func testHelpForTheCommandAndEachSubcommand() throws {
        XCTAssertEqual(try parse("--help").command, .help(nil))
        XCTAssertEqual(try parse("help", "listen").command, .help("listen"))
        for name in Invocation.subcommands {
            XCTAssertEqual(try parse(name, "--help").command, .help(name))
            XCTAssertTrue(Help.text(for: name).contains("usage: voicebox \(name)") || name == "resume", name)
        }
        XCTAssertEqual(try parse("say", "--rate", "x", "-h").command, .help("say"), "help wins over errors")
    }

    func testListen() throws {
        var reader = ArgumentReader(command: "listen", ["--file", "a.wav", "--keyphrase", "hello world", "--keyphrase", "stop",
                                                       "--language", "en", "--max-seconds", "10", "--partial", "--json"])
        let request = try Invocation.parseListen(&reader)
        XCTAssertEqual(request.file, Argument("a.wav"), "as given: the client opens it itself and passes it open")
        XCTAssertEqual(request.keyphrases, ["hello world", "stop"])
        XCTAssertEqual(request.language, "en")
        XCTAssertEqual(request.maxSeconds, 10)
        XCTAssertTrue(request.partial && request.json)
        let options = try request.options(partialResults: false)
        XCTAssertEqual(options["keyphrases"], DBusValue.stringArray(["hello world", "stop"]))
        XCTAssertEqual(options["max_seconds"], DBusValue.double(10))
        XCTAssertNil(options["partial_results"])
        XCTAssertNil(options["file"], "never a path: the file goes open, as fd")
        XCTAssertEqual(try parse("listen").command, .listen(ListenRequest()))
        XCTAssertThrowsError(try ListenRequest(grammarFile: Argument("/nonexistent.gram")).options(partialResults: false))
    }

    func testStandardInputAsAStream() throws {
        XCTAssertEqual(try parse("listen", "--stdin", "--format", "f32le", "--rate", "48000", "--channels", "2", "--json").command,
                       .listen(ListenRequest(stdin: StdinAudio(format: "f32le", rate: 48_000, channels: 2), json: true)))
        XCTAssertEqual(try parse("listen", "--rate", "8000", "--stdin").command,
                       .listen(ListenRequest(stdin: StdinAudio(rate: 8_000))), "in any order")
        XCTAssertEqual(try parse("dictate", "--stdin").command, .dictate(DictateRequest(stdin: StdinAudio())))
        XCTAssertEqual(usageError("listen", "--format", "f32le"), "--format describes --stdin, which is missing")
        XCTAssertEqual(usageError("listen", "--stdin", "--format", "u8"), "--format takes s16le or f32le, not 'u8'")
        XCTAssertEqual(usageError("listen", "--stdin", "--rate", "96000"), "--rate takes a number from 8000 to 48000, not '96000'")
        XCTAssertEqual(usageError("listen", "--stdin", "--rate", "16000.5"), "--rate takes a whole number, not '16000.5'")
        XCTAssertNotNil(usageError("listen", "--stdin", "--channels", "0"))
        XCTAssertEqual(usageError("listen", "--stdin", "--file", "a.wav"), "--stdin and --file cannot be used together")
        XCTAssertEqual(usageError("dictate", "--stdin", "--toggle"),
                       "--stdin dictates once, until the end of speech or of the input: not with --toggle")
        XCTAssertEqual(usageError("dictate", "--channels", "2"), "--channels describes --stdin, which is missing")
        let live = try parse("listen", "--stdin", "--silence-seconds", "0.8")
        guard case .listen(let request) = live.command else { return XCTFail("\(live)") }
        XCTAssertEqual(try request.options(partialResults: false)["silence_seconds"], DBusValue.double(0.8))
        XCTAssertEqual(usageError("listen", "--file", "a.wav", "--silence-seconds", "1"),
                       "--silence-seconds applies to the microphone and --stdin, not to a file")
    }

    func testAFileNameKeepsItsBytes() throws {
        let name: [UInt8] = Array("/tmp/x_".utf8) + [0xFF] + Array(".wav".utf8)
        let invocation = try Invocation.parse(arguments: [Argument("listen"), Argument("--file"), Argument(bytes: name)])
        guard case .listen(let request) = invocation.command else { return XCTFail("not listen") }
        XCTAssertEqual(request.file?.bytes, name, "not UTF-8, and kept byte for byte")
        let joined = try Invocation.parse(arguments: [Argument("listen"), Argument(bytes: Array("--file=".utf8) + name)])
        guard case .listen(let same) = joined.command else { return XCTFail("not listen") }
        XCTAssertEqual(same.file?.bytes, name, "--file=NAME too")
    }

    func testVersionAndSayFromStandardInput() throws {
        XCTAssertEqual(try parse("--version").command, .version)
        XCTAssertFalse(Invocation.version.isEmpty)
        guard case .say(let request) = try parse("say", "--rate", "1.2", "-").command else { return XCTFail("not say") }
        XCTAssertTrue(request.fromStandardInput)
        XCTAssertEqual(request.text, "")
        guard case .say(let words) = try parse("say", "a", "-", "b").command else { return XCTFail("not say") }
        XCTAssertFalse(words.fromStandardInput, "a dash among words is a word")
        XCTAssertEqual(words.text, "a - b")
    }

    func testVoicesStopStatusAndTheRest() throws {
        XCTAssertEqual(try parse("voices").command, .voices(language: "", json: false))
        XCTAssertEqual(try parse("voices", "--json", "en").command, .voices(language: "en", json: true))
        XCTAssertEqual(try parse("stop").command, .stop(.mine))
        XCTAssertEqual(try parse("stop", "7").command, .stop(.utterance(7)))
        XCTAssertEqual(try parse("stop", "--all").command, .stop(.all))
        XCTAssertEqual(try parse("status", "--json").command, .status(json: true))
        XCTAssertEqual(try parse("pause").command, .pause)
        XCTAssertEqual(try parse("resume").command, .resume)
        XCTAssertEqual(try parse("monitor").command, .monitor)
    }

    func testDictate() throws {
        XCTAssertEqual(try parse("dictate").command, .dictate(DictateRequest()))
        XCTAssertEqual(try parse("dictate", "--toggle", "--literal", "--output", "stdout").command,
                       .dictate(DictateRequest(mode: .toggle, literal: true, output: .stdout)))
        XCTAssertEqual(try parse("dictate", "--start").command, .dictate(DictateRequest(mode: .start)))
        XCTAssertEqual(try parse("dictate", "--stop").command, .dictate(DictateRequest(mode: .stop)))
        XCTAssertEqual(try parse("dictate", "--cancel", "--cancel").command, .dictate(DictateRequest(mode: .cancel)))
        XCTAssertEqual(try parse("dictate", "--output", "paste", "--typer", "wtype", "--no-cue").command,
                       .dictate(DictateRequest(output: .insert(.paste), typer: .wtype, cue: false)))
        XCTAssertEqual(try parse("dictate", "--output=stdout").command, .dictate(DictateRequest(output: .stdout)))
        XCTAssertEqual(try parse("dictate", "--language", "en-GB").command, .dictate(DictateRequest(language: "en-GB")))
        let options = try DictateRequest(language: "en-GB").options(heldByKey: true, partialResults: false)
        XCTAssertEqual(options["language"], DBusValue.string("en-GB"), "--language is the recognition's language")
        XCTAssertEqual(options["dictation"], DBusValue.boolean(true), "marked as a dictation, so shortcuts may end it")
        XCTAssertEqual(options["silence_seconds"], DBusValue.double(10))
        XCTAssertEqual(options["max_seconds"], DBusValue.double(120))
        XCTAssertNil(try DictateRequest().options(heldByKey: false, partialResults: false)["language"])
        XCTAssertEqual(try parse("dictate", "--paste-keys", "ctrl+shift+v").command,
                       .dictate(DictateRequest(pasteKeys: .ctrlShiftV)))
        XCTAssertEqual(usageError("dictate", "--paste-keys", "ctrl+"), "--paste-keys takes keys such as ctrl+shift+v or shift+Insert, not 'ctrl+'")
        XCTAssertEqual(usageError("dictate", "--paste-keys", "hyper+v"), "--paste-keys takes keys such as ctrl+shift+v or shift+Insert, not 'hyper+v'")
    }

    func testInsert() throws {
        XCTAssertEqual(try parse("insert", "go", "forward").command, .insert(InsertRequest(text: "go forward")))
        XCTAssertEqual(try parse("insert", "--output", "clipboard", "--typer", "xdotool", "--", "-x").command,
                       .insert(InsertRequest(text: "-x", mode: .clipboard, typer: .xdotool)))
        XCTAssertEqual(try parse("insert", "--output", "paste", "--paste-keys", "shift+Insert", "x").command,
                       .insert(InsertRequest(text: "x", mode: .paste, pasteKeys: .shiftInsert)))
    }

    func testSessionDetection() {
        XCTAssertEqual(DesktopSession.detect(["DISPLAY": ":0"]), .x11)
        XCTAssertEqual(DesktopSession.detect(["DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "sway"]), .wlroots)
        XCTAssertEqual(DesktopSession.detect(["DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "x11"]), .x11)
        XCTAssertEqual(DesktopSession.detect(["WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "Hyprland"]), .wlroots)
        XCTAssertEqual(DesktopSession.detect(["WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "ubuntu:GNOME"]), .gnomeOrKDE)
        XCTAssertEqual(DesktopSession.detect(["WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE"]), .gnomeOrKDE)
        XCTAssertEqual(DesktopSession.detect([:]), .none)
        XCTAssertEqual(DesktopSession.detect(["DISPLAY": ""]), .none)
    }

    func testInsertionPlan() throws {
        func plan(_ mode: InsertionMode, _ session: DesktopSession, text: String = "hello", typer: Typer? = nil,
                  socket: Bool = false) throws -> InsertionPlan {
            try InsertionPlan.choose(mode, text: text, session: session, typer: typer, ydotoolSocket: socket)
        }
        XCTAssertEqual(try plan(.type, .x11), .type(.xdotool))
        XCTAssertEqual(try plan(.type, .x11, text: "café"), .type(.xdotool), "xdotool types any Unicode")
        XCTAssertEqual(try plan(.paste, .x11), .paste(.xclip, keys: .xdotool))
        XCTAssertEqual(try plan(.clipboard, .wlroots), .clipboard(.wlClipboard))
        XCTAssertEqual(try plan(.type, .wlroots, text: "Größe"), .type(.wtype))
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, socket: true), .type(.ydotool))
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, text: "naïve", socket: true), .paste(.wlClipboard, keys: .ydotool),
                       "ydotool types US key codes: non-ASCII is pasted")
        XCTAssertEqual(try plan(.type, .gnomeOrKDE), .clipboardForHand(.wlClipboard), "nothing can type or press Ctrl+V")
        XCTAssertEqual(try plan(.type, .wlroots, typer: .ydotool), .type(.ydotool))
        XCTAssertThrowsError(try plan(.type, .none)) { XCTAssertEqual($0 as? InsertionError, .noSession) }
        XCTAssertEqual(InsertionError.missingProgram(purpose: "typing on X11", program: "xdotool", package: "xdotool").description,
                       "typing on X11 needs xdotool: apt install xdotool")
    }

    /// The cue plays as client "Voicebox", whose streams the service never silences (a dictation's
    /// cue would otherwise be muted by the listening it announces; AudioSessionTests hears it).
    func testTheCuePlaysAsVoiceboxsOwnClient() {
        XCTAssertEqual(Cue.paplayArguments("/x.wav"), ["--client-name=Voicebox", "--property=media.role=event", "/x.wav"])
    }

    func testCueIsAWAVFile() {
        let data = Cue.wav(Cue.tone(from: 660, to: 990))
        XCTAssertEqual(data.prefix(4), Data("RIFF".utf8))
        XCTAssertEqual(data.count, 44 + Int(Double(Cue.sampleRate) * 0.12) * 2)
    }
}
