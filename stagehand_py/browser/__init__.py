"""The browser layer: wrap a page, launch Chromium, connect to a running browser, follow tabs.

Its public names are the context options (also exported by ``stagehand_py``); the rest
(sessions, CDP channels, tabs, storage) is private and reached through ``Stagehand``.
"""

from ._options import BrowserOptions, Geolocation, ProxySettings

__all__ = ["BrowserOptions", "Geolocation", "ProxySettings"]
