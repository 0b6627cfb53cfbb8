"""sceneforge-height: a sceneforge plugin (a scenario and a probe head) installed beside sceneforge.

* ``height`` (:mod:`.scenario`): which of two objects has the higher top, in 3-D world
  coordinates (cm, Z up); ``sceneforge run height --n 8 --out OUT``.
* ``mlp`` (:mod:`.heads`): a 2-layer MLP probe head on the mean patch token;
  ``sceneforge probe ... --heads mlp``.

Both are found through the entry points in this distribution's ``pyproject.toml``.
"""
