print("voicebox")
