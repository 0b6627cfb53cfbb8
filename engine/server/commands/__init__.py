"""The server's command table (:mod:`.table`) and its handlers: stock UnrealCV commands
(:mod:`.stock`), image commands (:mod:`.image`) and the ``/sceneforge/*`` extensions (:mod:`.ext`)."""
