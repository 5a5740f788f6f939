from django.contrib import admin

from .models import Book


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):
    list_display = ["title", "author", "genre", "published", "price", "in_stock"]
    list_filter = ["genre", "in_stock", "published"]
    search_fields = ["title", "author"]
    date_hierarchy = "published"
    list_per_page = 100
