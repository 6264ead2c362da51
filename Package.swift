// swift-tools-version: 6.0
// Voicebox: speech for the Linux desktop over D-Bus.
// Only the toolchain and Debian's C libraries: nothing here is fetched.
import PackageDescription

let package = Package(
    name: "Voicebox",
    products: [
        .executable(name: "voiceboxd", targets: ["voiceboxd"]),
        .executable(name: "voicebox", targets: ["voicebox"]),
        .executable(name: "voicebox-worker", targets: ["voicebox-worker"]),
        .executable(name: "voicebox-audio", targets: ["voicebox-audio"]),
    ],
    targets: [
        // C libraries from Debian, seen through module maps.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // libpulse's .pc adds -pthread, which SwiftPM refuses with a warning; its headers need no flags.
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "CPocketsphinx", pkgConfig: "pocketsphinx", providers: [.apt(["libpocketsphinx-dev", "libsphinxbase-dev"])]),
        .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSamplerate", pkgConfig: "samplerate", providers: [.apt(["libsamplerate0-dev"])]),
        .systemLibrary(name: "CSeccomp", pkgConfig: "libseccomp", providers: [.apt(["libseccomp-dev"])]),
        // Linux calls Glibc's module map hides (header only, nothing to link).
        .systemLibrary(name: "CSystem"),

        // Threads of our own and what crosses them: a lock ThreadSanitizer can see (a pthread mutex,
        // instead of Synchronization.Mutex), handing a value from a thread to a task, starting a thread.
        .target(name: "VoiceboxThreads"),

        // The contract, at the bottom: what crosses a process boundary and the values it carries.
        // The D-Bus interfaces (org.voicebox.Speech1, the Spiel provider) and their errors, the
        // worker and audio-helper protocols, and the typed D-Bus vocabulary they are declared in.
        // It depends on nothing of ours, so the client can link it without the service.
        // dbus/*.xml is the one source of the bus interfaces: their Swift declarations, the
        // protocol the service's objects conform to and the error names are generated from it
        // at build time (ContractPlugin running ContractGenerator, which needs only the toolchain).
        .target(name: "VoiceboxContract", plugins: ["ContractPlugin"]),
        .executableTarget(name: "ContractGenerator"),
        .plugin(name: "ContractPlugin", capability: .buildTool(), dependencies: ["ContractGenerator"]),

        // One small Swift module per C library; each hides its pointers and callbacks.
        // VoiceboxBus is libdbus: the transport for the contract's declarations.
        .target(name: "VoiceboxBus", dependencies: ["CDBus", "VoiceboxContract", "VoiceboxThreads"]),
        .target(name: "VoiceboxSpeechd", dependencies: ["VoiceboxContract", "VoiceboxCore", "VoiceboxThreads", "VoiceboxSpawn"]),
        .target(name: "VoiceboxPulse", dependencies: ["CPulse", "VoiceboxContract", "VoiceboxCore", "VoiceboxThreads"]),
        .target(name: "VoiceboxPocketsphinx", dependencies: ["CPocketsphinx", "VoiceboxCore", "VoiceboxModels", "VoiceboxSndfile"]),
        // Where the recognition models are (files only: the service lists them, a worker loads one).
        .target(name: "VoiceboxModels", dependencies: ["VoiceboxCore"]),
        // The one resampler, libsamplerate, wherever audio is read: in the workers that read a
        // caller's file or a caller's raw stream that is not 16 kHz mono s16le (PCMConverter).
        .target(name: "VoiceboxSamplerate", dependencies: ["CSamplerate", "VoiceboxCore"]),
        // Audio files as 16 kHz mono samples (libsndfile, then the resampler): what a file worker runs.
        .target(name: "VoiceboxSndfile", dependencies: ["CSndfile", "VoiceboxCore", "VoiceboxSamplerate"]),
        // A caller's raw stream read as 16 kHz mono: as it is, or from the worker that converts it.
        .target(name: "VoiceboxStreams", dependencies: ["VoiceboxContract", "VoiceboxCore"]),

        // The service itself: plain Swift over protocols.
        .target(name: "VoiceboxCore", dependencies: ["CSystem", "VoiceboxContract", "VoiceboxThreads"]),
        // The D-Bus face of the service and the wiring of real parts.
        .target(name: "VoiceboxDaemon", dependencies: ["VoiceboxBus", "VoiceboxContract", "VoiceboxCore", "VoiceboxSpeechd",
                                                  "VoiceboxModels", "VoiceboxStreams", "VoiceboxThreads",
                                                  "VoiceboxSpawn", "VoiceboxWorkers"]),

        .executableTarget(name: "voiceboxd", dependencies: ["VoiceboxDaemon"]),
        // The service's side of the worker and audio-helper protocols (VoiceboxContract), and the worker.
        .target(name: "VoiceboxWorkers", dependencies: ["VoiceboxContract", "VoiceboxCore", "VoiceboxThreads", "VoiceboxModels",
                                                   "VoiceboxSpawn"]),
        .executableTarget(name: "voicebox-worker", dependencies: ["CSeccomp", "VoiceboxContract", "VoiceboxCore", "VoiceboxModels",
                                                                  "VoiceboxPocketsphinx", "VoiceboxSamplerate", "VoiceboxSndfile"]),
        // The sound-server connections (libpulse, which brings libsndfile), in a helper process of
        // their own, so that the service maps neither (AudioHelperProtocol).
        .executableTarget(name: "voicebox-audio", dependencies: ["CSeccomp", "VoiceboxContract", "VoiceboxCore", "VoiceboxThreads",
                                                                 "VoiceboxPulse"]),
        // Dictation's text handling (spoken punctuation): pure Swift, depends on nothing.
        .target(name: "VoiceboxDictation"),
        // The one way to start a child (clean signal state, chosen descriptors, working directory),
        // watch it through its pidfd, bound its wait and decode its end: the speech-dispatcher
        // spawner, the insertion helpers, the model check and the tests' subprocesses.
        .target(name: "VoiceboxSpawn", dependencies: ["VoiceboxThreads"]),
        // Inserting text into the focused window (xdotool, wtype, ydotool, the clipboard): pure Swift over helper programs.
        .target(name: "VoiceboxInsertion", dependencies: ["VoiceboxSpawn", "VoiceboxBus", "VoiceboxContract", "VoiceboxThreads"]),
        // The client: the contract and the bus, none of the service's modules.
        .executableTarget(name: "voicebox", dependencies: ["VoiceboxBus", "VoiceboxContract", "VoiceboxDictation", "VoiceboxInsertion",
                                                       "VoiceboxThreads"]),

        // The tests, in four tiers the toolchain knows (a target each; docs/testing.md):
        //   UnitTests        nothing outside the test process and this package's programs: no bus daemon,
        //                    no sound server, no speech-dispatcher; runs anywhere, in parallel;
        //   StackTests       a real dbus-daemon, sound server or speech-dispatcher (scripts/stack);
        //   SoundServerTests what a sound server decides: run on PulseAudio, Debian's stock PulseAudio
        //                    and PipeWire;
        //   SpeedTests       bounds that are the contract itself, and work that loads the machine on
        //                    purpose: run once, uninstrumented.
        // TestSupport holds the set-up they share (the stack, a voiceboxd, private servers, clean-ups).
        .target(name: "TestSupport", dependencies: ["VoiceboxSpawn", "VoiceboxBus", "VoiceboxContract", "VoiceboxDaemon",
                                                    "VoiceboxCore", "VoiceboxPulse", "VoiceboxThreads", "VoiceboxPocketsphinx",
                                                    "VoiceboxModels", "VoiceboxSpeechd"],
                path: "Tests/TestSupport"),
        .testTarget(name: "UnitTests", dependencies: ["VoiceboxCore", "VoiceboxThreads", "VoiceboxSpawn", "VoiceboxDictation",
                                                      "voicebox", "VoiceboxInsertion", "VoiceboxBus", "VoiceboxSpeechd",
                                                      "VoiceboxPulse", "VoiceboxPocketsphinx", "VoiceboxModels", "VoiceboxSndfile",
                                                      "VoiceboxSamplerate", "VoiceboxStreams", "VoiceboxWorkers", "VoiceboxContract", "TestSupport"]),
        .testTarget(name: "StackTests", dependencies: ["VoiceboxBus", "VoiceboxContract", "VoiceboxDaemon", "VoiceboxSpeechd",
                                                       "VoiceboxSpawn", "VoiceboxPulse", "VoiceboxCore", "VoiceboxThreads", "TestSupport"]),
        .testTarget(name: "SoundServerTests", dependencies: ["VoiceboxBus", "VoiceboxContract", "VoiceboxDaemon", "VoiceboxSpeechd",
                                                             "VoiceboxSpawn", "VoiceboxPulse", "VoiceboxCore", "VoiceboxThreads",
                                                             "TestSupport"]),
        .testTarget(name: "SpeedTests", dependencies: ["VoiceboxBus", "VoiceboxContract", "VoiceboxDaemon", "VoiceboxPocketsphinx", "VoiceboxSpeechd",
                                                       "VoiceboxModels", "VoiceboxSndfile", "VoiceboxCore", "VoiceboxSpawn",
                                                       "VoiceboxThreads", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
