from django.db import models


class Book(models.Model):
    GENRES = [
        ("fiction", "Fiction"),
        ("history", "History"),
        ("science", "Science"),
        ("poetry", "Poetry"),
        ("travel", "Travel"),
    ]

    title = models.CharField(max_length=200)
    author = models.CharField(max_length=100)
    genre = models.CharField(max_length=20, choices=GENRES)
    published = models.DateField()
    price = models.DecimalField(max_digits=6, decimal_places=2)
    in_stock = models.BooleanField(default=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title
