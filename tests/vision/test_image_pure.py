"""Image sizing, drawing, encoding and outline parsing, without a browser."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from stagehand_py._errors import InvalidArgumentError
from stagehand_py._vision import Box, Screenshot, actionable_ids, estimate_image_tokens
from stagehand_py._vision._image import PALETTE, draw_boxes, encode_smallest, fit_image, fit_scale


def test_token_estimates_follow_the_providers_rules() -> None:
    assert estimate_image_tokens(1280, 720) == 1229                      # 921600 / 750, rounded up
    assert estimate_image_tokens(1280, 720, provider="openai") == 85 + 170 * 6  # 1365x768 -> 3x2 tiles
    assert estimate_image_tokens(1024, 1024, provider="openai") == 85 + 170 * 4  # 768x768 -> 2x2 tiles
    assert estimate_image_tokens(512, 512, provider="openai") == 85 + 170      # never upscaled: 1 tile
    assert estimate_image_tokens(0, 10) == 0


def test_fit_scale_honours_both_caps() -> None:
    assert fit_scale(800, 600) == 1.0
    assert fit_scale(2560, 1440, max_side=1280) == pytest.approx(0.5)
    scale = fit_scale(1600, 1200, max_pixels=1_150_000)
    resized = fit_image(Image.new("RGB", (1600, 1200)), scale)
    assert resized.width * resized.height <= 1_150_000 and resized.width > 1200
    with pytest.raises(InvalidArgumentError, match="max_side=8"):
        fit_scale(10, 10, max_side=8)


def test_boxes_are_drawn_on_their_edges_with_the_number_tag_above() -> None:
    image = Image.new("RGB", (200, 100), "white")
    boxes = [Box(1, "0-5", 20, 40, 50, 30), Box(2, "0-9", 100, 0, 40, 20)]
    out = draw_boxes(image, boxes)
    assert out.getpixel((20, 55)) == PALETTE[0] and out.getpixel((69, 55)) == PALETTE[0]  # left and right edges
    assert out.getpixel((45, 55)) == (255, 255, 255)                                    # inside stays clear
    assert out.getpixel((21, 39)) == PALETTE[0]                                          # tag above the box
    assert out.getpixel((101, 1)) == PALETTE[1]                                          # at the top: tag inside
    assert image.getpixel((20, 55)) == (255, 255, 255)                                   # the input is untouched
    half = draw_boxes(Image.new("RGB", (100, 50), "white"), boxes, scale=0.5)
    assert half.getpixel((10, 27)) == PALETTE[0]


def test_the_smaller_encoding_wins() -> None:
    flat = Image.new("RGB", (400, 300), "white")
    assert encode_smallest(flat).media_type == "image/png"
    rng = random.Random(7)
    noise = Image.frombytes("RGB", (400, 300), bytes(rng.randrange(256) for _ in range(400 * 300 * 3)))
    encoded = encode_smallest(noise)
    assert encoded.media_type == "image/jpeg" and Image.open(io.BytesIO(encoded.data)).format == "JPEG"


def test_actionable_ids_come_in_outline_order() -> None:
    tree = "\n".join([
        "[0-1] RootWebArea: Page",
        "  [0-4] heading: Title",
        "  [0-7] button: Save",
        "  [0-9] StaticText: hello",
        "  [1-3] link: Home",
        "    [1-5] textbox: Name value=\"x\"",
        "  [0-12] img",
    ])
    assert actionable_ids(tree) == ["0-7", "1-3", "1-5"]


def test_box_numbers_map_to_element_ids() -> None:
    shot = Screenshot(b"x", "image/png", 10, 10, 1.0, (Box(1, "0-7", 0, 0, 5, 5), Box(2, "1-3", 5, 5, 5, 5)))
    assert dict(shot.numbers) == {1: "0-7", 2: "1-3"} and shot.element_id(2) == "1-3"
    with pytest.raises(InvalidArgumentError, match="no box numbered 3"):
        shot.element_id(3)
    assert shot.image_part().media_type == "image/png" and shot.image_part().data == b"x"
