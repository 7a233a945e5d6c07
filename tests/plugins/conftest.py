"""Plugin families are tested as users get them: installed, through their entry points."""

import pytest


@pytest.fixture(autouse=True)
def _installed_plugins(installed_plugins):
    pass
