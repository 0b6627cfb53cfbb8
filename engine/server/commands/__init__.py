"""The server's command table (:mod:`.table`, the registry), its handlers (stock UnrealCV commands
:mod:`.stock`, :mod:`.unrealcv`, :mod:`.camera_settings`; image commands :mod:`.image`, one per
row of the render-kind table; the ``/sceneforge/*`` extensions :mod:`.ext`) and :mod:`.dispatch`,
which loads them all and runs command lines."""
