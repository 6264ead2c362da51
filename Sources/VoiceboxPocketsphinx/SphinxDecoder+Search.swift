import CPocketsphinx
import Glibc
import VoiceboxCore

/// Switching a decoder between searches. Only between utterances: pocketsphinx refuses to
/// change the search while one is open.
extension SphinxDecoder {
    func prepare(_ plan: SearchPlan) throws {
        removeCustomSearch()
        switch plan {
        case .languageModel:
            guard hasLanguageModel else {
                throw RecognitionError.engineFailure("this decoder was loaded without a language model")
            }
        case .grammar(let text):
            try setGrammar(text)
        case .keyphrases(let phrases, let threshold):
            try setKeyphrases(phrases, threshold: threshold)
        }
    }

    /// Back to the state after loading: the language model search (if any) selected, ours gone.
    func removeCustomSearch() {
        _ = call { ps in
            // Select the default first: replacing or removing the current search leaves
            // pocketsphinx pointing at freed memory (set_search_internal) or at nothing.
            if hasLanguageModel { ps_set_search(ps, Self.defaultSearch) }
            ps_unset_search(ps, Self.customSearch)
        }
    }

    /// Builds the grammar's network ourselves instead of ps_set_jsgf_string, which leaks the
    /// parsed grammar and does not check that the network was built.
    private func setGrammar(_ text: String) throws {
        let (refusal, errors) = call { ps -> String? in
            guard let jsgf = jsgf_parse_string(text, nil) else { return "the grammar does not parse" }
            defer { jsgf_grammar_free(jsgf) }
            guard let rule = jsgf_get_public_rule(jsgf) else { return "the grammar has no public rule" }
            let weight = Float(cmd_ln_float_r(ps_get_config(ps), "-lw"))
            guard let fsg = jsgf_build_fsg(jsgf, rule, ps_get_logmath(ps), weight) else {
                return "the grammar's network cannot be built"
            }
            defer { fsg_model_free(fsg) }  // the search keeps its own reference
            return ps_set_fsg(ps, Self.customSearch, fsg) == 0 ? nil : "the grammar was refused"
        }
        // Some faults (an undefined rule, a word missing from the dictionary) are only logged.
        guard refusal == nil, errors.isEmpty else {
            removeCustomSearch()
            let reasons = errors.map(Self.withoutParserLine)
            throw RecognitionError.invalidGrammar(errors.isEmpty ? refusal ?? "" : reasons.joined(separator: "; "))
        }
        try select(Self.customSearch)
    }

    /// sphinxbase's JSGF parser reports "syntax error at line N" from flex's line counter, which
    /// `yy_scan_string` never sets: N is whatever the heap held (-385875966 here, 2 under
    /// ThreadSanitizer for an error on line 3). Never true for a grammar given as a string, so
    /// always dropped.
    static func withoutParserLine(_ reason: String) -> String {
        guard let match = reason.firstMatch(of: #/ at line -?\d+/#) else { return reason }
        var cleaned = reason
        cleaned.removeSubrange(match.range)
        return cleaned
    }

    /// Keyword spotting takes several phrases only from a file: one "phrase/threshold/" a line
    /// (no space before the slash: pocketsphinx would keep it as part of the phrase).
    private func setKeyphrases(_ phrases: [String], threshold: Double) throws {
        let lines = phrases.map { "\($0)/\(threshold)/\n" }.joined()
        let file = try MemoryFile(contents: lines)
        let (status, errors) = call { ps in ps_set_kws(ps, Self.customSearch, file.path) }
        // A phrase with a word missing from the dictionary is logged and skipped.
        guard status == 0, errors.isEmpty else {
            removeCustomSearch()
            throw RecognitionError.invalidArgument(errors.isEmpty ? "the keyphrases were refused" : errors.joined(separator: "; "))
        }
        try select(Self.customSearch)
    }

    /// The search that hears without looking for words (`SpeechDecoder.hearNext`): a grammar of
    /// the one word "a", whose few models cost a small part of a search (0.005 of real time
    /// against 0.3-0.4 for the language model), made on first use and kept. pocketsphinx's front
    /// end (features, cepstral mean, detector) runs the same whatever the search. Nil when the
    /// dictionary lacks the word: then there is no cheap search and decoders search anyway.
    func skimSearch() -> String? {
        if call({ ps in ps_get_fsg(ps, Self.skimSearchName) != nil }).0 { return Self.skimSearchName }
        let made = call { ps -> Bool in
            guard let jsgf = jsgf_parse_string("#JSGF V1.0; grammar skim; public <a> = a;", nil) else { return false }
            defer { jsgf_grammar_free(jsgf) }
            guard let rule = jsgf_get_public_rule(jsgf),
                  let fsg = jsgf_build_fsg(jsgf, rule, ps_get_logmath(ps), Float(cmd_ln_float_r(ps_get_config(ps), "-lw"))) else {
                return false
            }
            defer { fsg_model_free(fsg) }  // the search keeps its own reference
            return ps_set_fsg(ps, Self.skimSearchName, fsg) == 0
        }
        return made.0 && made.errors.isEmpty ? Self.skimSearchName : nil
    }

    static let skimSearchName = "voicebox-skim"

    /// The search pocketsphinx runs now.
    var currentSearch: String? {
        call { ps in ps_get_search(ps).map { String(cString: $0) } }.0
    }

    /// Selects the search named `search` (between utterances only).
    func select(_ search: String) throws {
        let (status, errors) = call { ps in ps_set_search(ps, search) }
        guard status == 0 else {
            throw RecognitionError.engineFailure("cannot select search \(search): \(errors.joined(separator: "; "))")
        }
    }
}
